import CallsCluster
import CallsCore
import CallsDatabase
import CallsRedis
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation

/// The REST API: validate → authorise → delegate to the store. Runs on the REST worker queue,
/// never on the web service thread. Every endpoint is documented in docs/protocol.md.
struct RESTRouter: Sendable {
    let store: CallStore
    let keys: ServerKeys
    let signer: CallTokenSigner
    let config: ServerConfiguration
    let log: ServerLog
    let mediaPort: Int
    /// Where people reach this server (`publicURL`, else the listening address): invite links.
    let publicURL: String
    /// The webhooks in force.
    let webhooks: WebhookDirectory
    /// The rooms' rules (the core reads them on each join).
    let roomRules: RoomRulesDirectory
    /// What to do after REST changed the stored webhooks.
    let webhooksChanged: @Sendable () -> Void
    /// Ends the sessions and refuses the call tokens that a revocation covers (a user deleted or
    /// all their tokens revoked; or one auth token).
    let revoke: @Sendable (Revocation) throws -> Void
    /// After REST replaced a room's rules (stored, and in `roomRules`): the rooms apply them
    /// (the banned leave; a lifted removal, third, lets that uid back in) and the other nodes hear.
    let roomRulesChanged: @Sendable (String, RoomRules?, String?) -> Void
    /// This node's id and the cluster's live nodes (nil: one node, not in a cluster).
    let cluster: @Sendable () throws(RedisError) -> (node: String, nodes: [ClusterNode])?
    /// How many users login may create from one address.
    let signups: SignupLimiter
    /// Requests the store failed (a full disk, a database down): the first of an outage is
    /// logged with its error, then its end — a write the store took (reads go on working on a
    /// full disk, and some routes never touch the store) — not one line a request.
    let storeOutage: OutageLog

    func handle(_ r: HTTPRequest) -> HTTPResponse {
        do {
            let response = try route(r)
            if r.method != Route.Method.get.rawValue { storeOutage.succeeded() }
            return response
        } catch let e as ServerError {
            return HTTPResponse(status: e.status, json: e.json)
        } catch DatabaseError.unavailable(let why) {
            // PostgreSQL is down: nothing was written; the client may retry (a node reconnects by itself).
            storeOutage.failed(["request": "\(r.method) \(r.path)", "error": DatabaseError.unavailable(why).description])
            return HTTPResponse(status: 503, json: ServerError.databaseUnavailable.json)
        } catch {
            storeOutage.failed(["request": "\(r.method) \(r.path)", "error": "\(error)"])
            let said = (error as? DatabaseError)?.isFull == true ? ServerError.storageFull : ServerError.storage
            return HTTPResponse(status: said.status, json: said.json)
        }
    }

    /// One endpoint: a method, a path pattern (`*` matches one segment, never an empty one) and
    /// its handler, which gets the path's segments. The table below is the only list of
    /// endpoints: a path that matches some pattern under another method is answered 405, any
    /// other 404.
    struct Route: Sendable {
        enum Method: String, Sendable, CaseIterable { case get = "GET", post = "POST", put = "PUT", delete = "DELETE" }
        let method: Method
        let pattern: [Substring]
        let handle: @Sendable (RESTRouter, HTTPRequest, [String]) throws -> HTTPResponse

        init(_ method: Method, _ pattern: String, _ handle: @escaping @Sendable (RESTRouter, HTTPRequest, [String]) throws -> HTTPResponse) {
            self.method = method
            self.pattern = pattern.split(separator: "/")
            self.handle = handle
        }

        func matches(_ parts: [String]) -> Bool {
            pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
        }
    }

    static let routes: [Route] = [
        Route(.get, "healthz") { _, _, _ in HTTPResponse(status: 200, json: #"{"status":"ok"}"#) },
        Route(.get, "v3/app") { rt, _, _ in
            rt.ok(AppInfo(appId: rt.keys.appId, region: rt.config.region, mediaPort: rt.mediaPort, publicURL: rt.publicURL))
        },
        Route(.get, "call/*") { rt, r, parts in
            guard WireIdentifier.isValid(parts[1], max: WireIdentifier.sessionIDMax) else { throw ServerError(.sessionIdInvalid, "Not a session id.") }
            let call = try rt.store.latestCall(sessionId: parts[1])
            // A page anyone with the link opens: how many are in, never who.
            let present = call.map { c in c.endedAt == nil ? c.participants.filter { $0.leftAt == nil }.count : 0 } ?? 0
            // (A grant is shown back only as the characters a JWT has: nothing else reaches the page.)
            let invite = r.query["invite"].flatMap { g in g.count <= 4096 && g.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) ? g : nil }
            let html = InvitePage.html(sessionId: parts[1], publicURL: rt.publicURL, present: present, status: call?.status, invite: invite,
                                       appId: rt.keys.appId, iceServers: rt.config.webrtcIceServers)
            return HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: Array(html.utf8), headers: InvitePage.securityHeaders)
        },
        // The browser page's own script and style (Resources/web).
        Route(.get, "web/*") { _, _, parts in
            guard let body = InvitePage.asset(parts[1]), let type = InvitePage.assets[parts[1]] else { throw ServerError(.notFound, "No such file.") }
            return HTTPResponse(status: 200, contentType: type, body: body,
                                headers: [("x-content-type-options", "nosniff"), ("cache-control", "no-cache")])
        },
        Route(.get, ".well-known/apple-app-site-association") { rt, _, _ in
            HTTPResponse(status: 200, contentType: "application/json", body: Array(InvitePage.appleAppSiteAssociation(appIDs: rt.config.appleAppIDs).utf8))
        },
        Route(.get, ".well-known/assetlinks.json") { rt, _, _ in
            HTTPResponse(status: 200, contentType: "application/json", body: Array(InvitePage.assetLinks(packages: rt.config.androidApps).utf8))
        },
        Route(.post, "v3/users") { rt, r, _ in try rt.createUser(r) },
        Route(.get, "v3/users") { rt, r, _ in
            try rt.requireAPIKey(r)
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.users(page: page, perPage: perPage)
            return rt.list(p.items, p)
        },
        Route(.get, "v3/users/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard let u = try rt.store.user(uid: parts[2]) else { throw ServerError.uidNotFound(parts[2]) }
            return rt.ok(u)
        },
        Route(.put, "v3/users/*") { rt, r, parts in try rt.updateUser(r, uid: parts[2]) },
        Route(.delete, "v3/users/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard try rt.store.deleteUser(uid: parts[2]) else { throw ServerError.uidNotFound(parts[2]) }
            try rt.revoke(.user(parts[2]))
            return rt.ok(["success": true])
        },
        Route(.post, "v3/users/*/auth_tokens") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard try rt.store.user(uid: parts[2]) != nil else { throw ServerError.uidNotFound(parts[2]) }
            let token = try rt.issueAuthToken(uid: parts[2])
            return rt.ok(AuthTokenBody(uid: parts[2], authToken: token, createdAt: epochMilliseconds() / 1000))
        },
        Route(.get, "v3/users/*/auth_tokens") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard try rt.store.user(uid: parts[2]) != nil else { throw ServerError.uidNotFound(parts[2]) }
            return rt.ok(try rt.store.authTokens(uid: parts[2]))
        },
        Route(.delete, "v3/users/*/auth_tokens") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard try rt.store.user(uid: parts[2]) != nil else { throw ServerError.uidNotFound(parts[2]) }
            let deleted = try rt.store.deleteAuthTokens(uid: parts[2])
            // Every token gone: so are the sessions and call tokens they gave.
            try rt.revoke(.user(parts[2]))
            return rt.ok(DeletedBody(success: true, deleted: deleted))
        },
        Route(.delete, "v3/users/*/auth_tokens/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard let id = try rt.store.deleteAuthToken(uid: parts[2], token: parts[4]) else {
                throw ServerError(.authTokenNotFoundForUser, "No such auth token for '\(parts[2])'.")
            }
            // What it opened closes; the call tokens it minted stop working.
            try rt.revoke(.authToken(uid: parts[2], id: id))
            return rt.ok(DeletedBody(success: true, deleted: 1))
        },
        Route(.post, "v3/users/*/push_tokens") { rt, r, parts in try rt.registerPushToken(r, uid: parts[2]) },
        Route(.get, "v3/users/*/push_tokens") { rt, r, parts in
            try rt.requirePushActor(r, uid: parts[2])
            return rt.ok(try rt.store.pushTokens(uid: parts[2]))
        },
        Route(.delete, "v3/users/*/push_tokens") { rt, r, parts in try rt.deletePushTokens(r, uid: parts[2], token: r.query["token"]) },
        Route(.delete, "v3/users/*/push_tokens/*") { rt, r, parts in try rt.deletePushTokens(r, uid: parts[2], token: parts[4]) },
        Route(.get, "v3/push/deliveries") { rt, r, _ in
            try rt.requireAPIKey(r)
            let status = try r.query["status"].map { s in
                guard let v = StoredPush.Status(rawValue: s) else {
                    throw ServerError.badRequest("status is one of \(StoredPush.Status.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return v
            }
            if let sid = r.query["sessionId"] { try rt.validate(sessionId: sid) }
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.pushDeliveries(status: status, sessionId: r.query["sessionId"], page: page, perPage: perPage)
            return rt.list(p.items, p)
        },
        Route(.post, "v3/sdk/login") { rt, r, _ in try rt.login(r) },
        Route(.get, "v3/me") { rt, r, _ in rt.ok(try rt.requireUser(r)) },
        Route(.post, "v3.0/call_tokens") { rt, r, _ in try rt.callToken(r) },
        Route(.get, "v3/calls") { rt, r, _ in
            var f = try rt.callFilter(r)
            f.visibleTo = try rt.callViewer(r)
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.calls(f, page: page, perPage: perPage)
            let now = epochMilliseconds()
            // Each as its viewer may see it (`CallAccess`).
            let shown = p.items.map { c in CallAccess(viewer: f.visibleTo, call: c, now: now)?.restrict(c) ?? c }
            return rt.list(shown.map { CallRecord($0, baseURL: rt.publicURL).seen(by: f.visibleTo) }, p)
        },
        Route(.get, "v3/calls/*/transcriptions") { rt, r, parts in
            let access = try rt.accessibleCall(r, parts[2]).access
            let page = try rt.intParam(r, "page", default: 1, range: 1...1_000_000)
            let perPage = try rt.intParam(r, "perPage", default: 100, range: 1...1000)
            let p = try rt.store.transcripts(sessionId: parts[2], page: page, perPage: perPage)
            // (A participant's view: the transcripts that ran while they were there.)
            let items = p.items.filter(access.covers)
            return rt.list(items.map { $0.served(rt.publicURL) }, p)
        },
        Route(.get, "v3/calls/*/transcriptions/*") { rt, r, parts in try rt.transcriptFile(r, sessionId: parts[2], name: parts[4]) },
        Route(.get, "v3/calls/*/messages") { rt, r, parts in
            let access = try rt.accessibleCall(r, parts[2]).access
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.chatMessages(sessionId: parts[2], page: page, perPage: perPage, within: access.spans)
            return rt.list(p.items, p)
        },
        Route(.get, "v3/calls/*/recordings/*") { rt, r, parts in try rt.recordingFile(r, sessionId: parts[2], rid: parts[4], pid: nil) },
        Route(.get, "v3/calls/*/recordings/*/*") { rt, r, parts in try rt.recordingFile(r, sessionId: parts[2], rid: parts[4], pid: parts[5]) },
        Route(.get, "v3/calls/*") { rt, r, parts in
            rt.ok(CallRecord(try rt.visibleCall(r, parts[2]), baseURL: rt.publicURL).seen(by: try rt.callViewer(r)))
        },
        Route(.get, "v3/webhooks/deliveries") { rt, r, _ in
            try rt.requireAPIKey(r)
            let status = r.query["status"]
            guard status == nil || ["pending", "delivered", "dead", "dropped"].contains(status ?? "") else {
                throw ServerError.badRequest("status is pending, delivered, dead or dropped.")
            }
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.deliveries(status: status, page: page, perPage: perPage)
            return rt.list(p.items, p)
        },
        Route(.post, "v3/webhooks/deliveries/*/retry") { rt, r, parts in
            try rt.requireAPIKey(r)
            guard try rt.store.retryDelivery(deliveryId: parts[3], at: epochMilliseconds()) else {
                throw ServerError(.deliveryNotFound, "No webhook delivery '\(parts[3].prefix(100))'.")
            }
            return rt.ok(["success": true])
        },
        Route(.get, "v3/cluster/nodes") { rt, r, _ in
            try rt.requireAPIKey(r)
            struct Body: Encodable { var node: String?; var nodes: [ClusterNode] }
            do {
                guard let c = try rt.cluster() else { return rt.ok(Body(node: nil, nodes: [])) }
                return rt.ok(Body(node: c.node, nodes: c.nodes))
            } catch {
                throw ServerError(.unavailable, "The cluster registry (Redis) is unavailable: \(error)")
            }
        },
        Route(.get, "v3/webhooks") { rt, r, _ in
            try rt.requireAPIKey(r)
            return rt.ok(rt.webhooks.all.map { WebhookBody($0, source: rt.webhooks.isFixed($0.id) ? .config : .api) })
        },
        Route(.post, "v3/webhooks") { rt, r, _ in try rt.saveWebhook(r, id: nil) },
        Route(.put, "v3/webhooks/*") { rt, r, parts in try rt.saveWebhook(r, id: parts[2]) },
        Route(.delete, "v3/webhooks/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            if rt.webhooks.isFixed(parts[2]) { throw ServerError(.webhookInConfig, "Webhook '\(parts[2])' is defined in the config file; change it there.") }
            guard try rt.store.deleteWebhook(id: parts[2]) else { throw ServerError(.webhookNotFound, "No webhook '\(parts[2].prefix(64))'.") }
            rt.webhooksChanged()
            return rt.ok(["success": true])
        },
        Route(.get, "v3/rooms/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            try rt.validate(sessionId: parts[2])
            return rt.ok(RoomRulesBody(parts[2], rt.roomRules.rules(parts[2]), default: rt.roomRules.defaultModeration,
                                       access: rt.roomRules.defaultAccess))
        },
        Route(.put, "v3/rooms/*") { rt, r, parts in try rt.setRoomRules(r, sessionId: parts[2]) },
        Route(.delete, "v3/rooms/*") { rt, r, parts in
            try rt.requireAPIKey(r)
            try rt.validate(sessionId: parts[2])
            try rt.store.setRoomRules(parts[2], nil)
            rt.roomRules.set(parts[2], nil)
            rt.roomRulesChanged(parts[2], nil, nil)
            return rt.ok(["success": true])
        },
        Route(.get, "v3/rooms/*/bans") { rt, r, parts in
            try rt.requireAPIKey(r)
            try rt.validate(sessionId: parts[2])
            return rt.ok(RoomBansBody(sessionId: parts[2], bannedUids: rt.roomRules.rules(parts[2])?.bannedUids ?? []))
        },
        Route(.post, "v3/rooms/*/invites") { rt, r, parts in try rt.createInvite(r, sessionId: parts[2]) },
        Route(.get, "v3/rooms/*/invites") { rt, r, parts in
            try rt.requireAPIKey(r)
            try rt.validate(sessionId: parts[2])
            return rt.ok(try rt.store.invites(sessionId: parts[2]))
        },
        Route(.delete, "v3/rooms/*/invites/*") { rt, r, parts in try rt.deleteInvite(r, sessionId: parts[2], inviteId: parts[4]) },
        Route(.post, "v3/invites/redeem") { rt, r, _ in try rt.redeemInvite(r) },
        Route(.put, "v3/rooms/*/bans/*") { rt, r, parts in try rt.setBan(r, sessionId: parts[2], uid: parts[4], banned: true) },
        Route(.delete, "v3/rooms/*/bans/*") { rt, r, parts in try rt.setBan(r, sessionId: parts[2], uid: parts[4], banned: false) },
        Route(.post, "v3/groups") { rt, r, _ in try rt.createGroup(r) },
        Route(.get, "v3/groups") { rt, r, _ in
            let member = try rt.groupActor(r)
            let (page, perPage) = try rt.paging(r)
            let p = try rt.store.groups(member: member, page: page, perPage: perPage)
            return rt.list(p.items, p)
        },
        Route(.get, "v3/groups/*") { rt, r, parts in
            let actor = try rt.groupActor(r)
            let g = try rt.existingGroup(parts[2])
            guard actor == nil || g.members.contains(actor ?? "") else { throw ServerError.groupNotFound(parts[2]) }
            return rt.ok(g)
        },
        Route(.delete, "v3/groups/*") { rt, r, parts in
            try rt.requireGroupOwner(r, try rt.existingGroup(parts[2]))
            _ = try rt.store.deleteGroup(guid: parts[2])
            return rt.ok(["success": true])
        },
        Route(.post, "v3/groups/*/members") { rt, r, parts in
            try rt.requireGroupOwner(r, try rt.existingGroup(parts[2]))
            struct Body: Decodable { var uids: [String] }
            let b: Body = try rt.decode(r)
            guard !b.uids.isEmpty, b.uids.count <= 100 else { throw ServerError.badRequest("Give 1…100 uids.") }
            for u in b.uids { guard try rt.store.user(uid: u) != nil else { throw ServerError.uidNotFound(u) } }
            switch try rt.store.addGroupMembers(guid: parts[2], uids: b.uids) {
            case .added(let g): return rt.ok(g)
            case .noGroup: throw ServerError.groupNotFound(parts[2])
            case .full: throw ServerError(.limitReached, "A group holds at most \(maxGroupMembers) members: remove some before you add more.")
            }
        },
        Route(.delete, "v3/groups/*/members/*") { rt, r, parts in
            let g = try rt.existingGroup(parts[2])
            // Members may leave; the owner and the operator may remove anyone but the owner.
            if try rt.groupActor(r) != parts[4] { try rt.requireGroupOwner(r, g) }
            guard parts[4] != g.owner else { throw ServerError.badRequest("The owner cannot leave; delete the group instead.") }
            guard try rt.store.removeGroupMember(guid: parts[2], uid: parts[4]) else { throw ServerError.uidNotFound(parts[4]) }
            return rt.ok(try rt.existingGroup(parts[2]))
        },
    ]

    private func route(_ r: HTTPRequest) throws -> HTTPResponse {
        // The path as given, empty segments too: "/v3/users/" is no route. (libwebsockets makes
        // "//" one "/" before us, and decodes a trailing "%00" away — "…/auth_tokens/%00" comes
        // as "…/auth_tokens/" —, which must not become "…/auth_tokens": every token.)
        let parts = (r.path.hasPrefix("/") ? r.path.dropFirst() : Substring(r.path)).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var allowed: [Route.Method] = []
        for route in Self.routes where route.matches(parts) {
            if route.method.rawValue == r.method { return try route.handle(self, r, parts) }
            allowed.append(route.method)
        }
        if !allowed.isEmpty {
            // RFC 9110 §15.5.6: a 405 says what the path does take (HEAD wherever GET is).
            let methods = Route.Method.allCases.filter(allowed.contains).flatMap { $0 == .get ? ["GET", "HEAD"] : [$0.rawValue] }
            let e = ServerError(.methodNotAllowed, "\(r.method) is not allowed on \(r.path).")
            return HTTPResponse(status: e.status, contentType: "application/json", body: Array(e.json.utf8),
                                headers: [("allow", methods.joined(separator: ", "))])
        }
        throw ServerError(.notFound, "No endpoint \(r.method) \(r.path).")
    }

    // MARK: Handlers

    private func createUser(_ r: HTTPRequest) throws -> HTTPResponse {
        try requireAPIKey(r)
        struct Body: Decodable { var uid: String; var name: String?; var avatar: String? }
        let b: Body = try decode(r)
        try validate(uid: b.uid)
        try validate(avatar: b.avatar)
        guard let u = try store.createUser(uid: b.uid, name: clean(b.name) ?? b.uid, avatar: b.avatar) else {
            throw ServerError(.uidAlreadyExists, "A user with uid '\(b.uid)' exists already.")
        }
        return ok(u)
    }

    private func updateUser(_ r: HTTPRequest, uid: String) throws -> HTTPResponse {
        try requireAPIKey(r)
        struct Body: Decodable { var name: String?; var avatar: String? }
        let b: Body = try decode(r)
        guard b.name != nil || b.avatar != nil else { throw ServerError.badRequest("Give name and/or avatar.") }
        if let n = b.name, clean(n) == nil { throw ServerError.badRequest("The name is empty.") }
        if b.avatar != "" { try validate(avatar: b.avatar) }
        guard let u = try store.updateUser(uid: uid, name: clean(b.name), avatar: b.avatar)
        else { throw ServerError.uidNotFound(uid) }
        return ok(u)
    }

    private func callToken(_ r: HTTPRequest) throws -> HTTPResponse {
        try requireAppID(r)
        struct Body: Decodable { var sessionId: String; var uid: String?; var role: String? }
        let b: Body = try decode(r)
        let uid: String
        var role: String?
        var authTokenID: String?
        if r.header("apikey") != nil {
            // The operator (your backend) issues tokens for any user, optionally with a role.
            try requireAPIKey(r)
            guard let u = b.uid else { throw ServerError.badRequest("uid is required with the apikey.") }
            guard try store.user(uid: u) != nil else { throw ServerError.uidNotFound(u) }
            guard b.role == nil || b.role.flatMap(ParticipantRole.init(rawValue:)) != nil else {
                throw ServerError.badRequest("role must be moderator or participant.")
            }
            uid = u
            role = b.role
        } else {
            uid = try requireUser(r).uid
            guard b.role == nil else { throw ServerError(.roleNotAllowed, "Only the operator (apikey) may grant a role.") }
            authTokenID = r.header("authtoken").map(CallStore.authTokenID)
        }
        try validate(sessionId: b.sessionId)
        // A ringing call's room is its parties' alone, whoever asks (the operator too).
        let ringing = b.sessionId.hasPrefix(CallTokenClaims.ringingSessionPrefix)
        if ringing, try store.ringParties(sessionId: b.sessionId)?.contains(uid) != true {
            throw ServerError(.notCallParty, "'\(uid)' is not a party of call '\(b.sessionId.prefix(100))'; only its parties may join it.")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let token = signer.sign(CallTokenClaims(app: keys.appId, sub: uid, sid: b.sessionId, iat: now,
                                                exp: now + config.callTokenTTLSeconds, role: role, jti: Crypto.randomHex(16),
                                                aud: CallTokenClaims.audience(appId: keys.appId), party: ringing ? true : nil,
                                                atid: authTokenID))
        return ok(["token": token])
    }

    /// Groups a user may own when they make one with their own auth token.
    static let maxGroupsPerOwner = 100

    private func createGroup(_ r: HTTPRequest) throws -> HTTPResponse {
        struct Body: Decodable { var guid: String; var name: String?; var owner: String?; var members: [String]? }
        let actor = try groupActor(r)
        let b: Body = try decode(r)
        guard WireIdentifier.isValid(b.guid, max: WireIdentifier.userIDMax) else {
            throw ServerError(.guidInvalid, "A guid is 1–\(WireIdentifier.userIDMax) characters of \(WireIdentifier.characters).")
        }
        // A user creates groups they own; the operator names the owner.
        guard let owner = actor ?? b.owner else { throw ServerError.badRequest("owner is required with the apikey.") }
        let members = b.members ?? []
        guard members.count <= 100 else { throw ServerError.badRequest("At most 100 members at once.") }
        for u in [owner] + members { guard try store.user(uid: u) != nil else { throw ServerError.uidNotFound(u) } }
        // A user who makes a group with their own auth token may own at most `maxGroupsPerOwner`
        // (each is rows, made in a loop otherwise); the operator is not limited.
        switch try store.createGroup(guid: b.guid, name: clean(b.name) ?? b.guid, owner: owner, members: members,
                                     ownedLimit: actor == nil ? nil : Self.maxGroupsPerOwner) {
        case .created(let g): return ok(g)
        case .guidTaken: throw ServerError(.guidAlreadyExists, "A group with guid '\(b.guid)' exists already.")
        case .ownerFull:
            throw ServerError(.limitReached, "You own \(Self.maxGroupsPerOwner) groups: delete one before you make another.")
        }
    }

    /// nil for the operator (apikey), else the user (authToken) acting on groups.
    func groupActor(_ r: HTTPRequest) throws -> String? { try callViewer(r) }

    func existingGroup(_ guid: String) throws -> StoredGroup {
        guard let g = try store.group(guid: guid) else { throw ServerError.groupNotFound(guid) }
        return g
    }

    func requireGroupOwner(_ r: HTTPRequest, _ g: StoredGroup) throws {
        guard let actor = try groupActor(r) else { return }
        guard g.members.contains(actor) else { throw ServerError.groupNotFound(g.guid) }
        guard actor == g.owner else { throw ServerError(.notGroupOwner, "Only the group's owner may do that.") }
    }

    /// The latest call of `sessionId` as the requester may see it (`CallAccess`): the operator
    /// and the call's moderators all of it, another participant what ran while they were there.
    @discardableResult
    func visibleCall(_ r: HTTPRequest, _ sessionId: String) throws -> StoredCall {
        try accessibleCall(r, sessionId).call
    }

    /// The call (restricted) and the requester's access to it.
    func accessibleCall(_ r: HTTPRequest, _ sessionId: String) throws -> (call: StoredCall, access: CallAccess) {
        let viewer = try callViewer(r)
        guard let call = try store.latestCall(sessionId: sessionId),
              let access = CallAccess(viewer: viewer, call: call, now: epochMilliseconds()) else {
            throw ServerError.sessionNotFound(sessionId)
        }
        return (access.restrict(call), access)
    }

    private func login(_ r: HTTPRequest) throws -> HTTPResponse {
        try requireAppID(r)
        struct Body: Decodable { var uid: String; var authKey: String; var name: String? }
        let b: Body = try decode(r)
        guard config.authKeyLogin else {
            throw ServerError(.authKeyLoginDisabled, "Login with the auth key is disabled on this server: log in with an auth token from your backend (POST /v3/users/{uid}/auth_tokens).")
        }
        guard Crypto.constantTimeEqual(Array(b.authKey.utf8), Array(keys.authKey.utf8)) else { throw ServerError.authKeyInvalid }
        try validate(uid: b.uid)
        var user = try store.user(uid: b.uid)
        if user == nil {
            guard config.autoCreateUsers else { throw ServerError.uidNotFound(b.uid) }
            // (Refused as a 429: counted and logged once a minute per peer, as every refusal.)
            guard try store.userCount() < config.autoCreateUsersMax else {
                throw ServerError(.limitReached, "This server creates no more users on login (it holds \(config.autoCreateUsersMax)): your backend creates them (POST /v3/users).")
            }
            guard signups.allow(r.peer) else {
                throw ServerError(.rateLimited, "Too many new users from this address (\(signups.perHour) an hour): try again later, or have your backend create them (POST /v3/users).")
            }
            user = try store.createUser(uid: b.uid, name: clean(b.name) ?? b.uid) ?? store.user(uid: b.uid)
        }
        guard let u = user else { throw ServerError.uidNotFound(b.uid) }
        let token = try issueAuthToken(uid: u.uid)
        return ok(LoginBody(uid: u.uid, name: u.name, avatar: u.avatar, authToken: token))
    }

    /// A new auth token for `uid`; the oldest ones it pushes past the user's bound are revoked
    /// as `DELETE …/auth_tokens/{token}` revokes one (what they opened closes, on every node).
    func issueAuthToken(uid: String) throws -> String {
        let issued = try store.createAuthToken(uid: uid)
        for id in issued.evicted { try revoke(.authToken(uid: uid, id: id)) }
        return issued.token
    }

    // MARK: Validation and auth

    func requireAPIKey(_ r: HTTPRequest) throws {
        guard let k = r.header("apikey"), !k.isEmpty else { throw ServerError.emptyAPIKey }
        guard Crypto.constantTimeEqual(Array(k.utf8), Array(keys.apiKey.utf8)) else { throw ServerError.apiKeyNotFound }
    }

    func requireAppID(_ r: HTTPRequest) throws {
        guard let a = r.header("appid"), !a.isEmpty else { throw ServerError.emptyAppID }
        guard a == keys.appId else { throw ServerError.appIDMismatch }
    }

    func requireUser(_ r: HTTPRequest) throws -> StoredUser {
        guard let t = r.header("authtoken"), !t.isEmpty else { throw ServerError.emptyAuthToken }
        guard let u = try store.user(authToken: t, maxAgeSeconds: config.authTokenTTLSeconds) else { throw ServerError.authTokenNotFound }
        return u
    }

    func validate(uid: String) throws {
        guard WireIdentifier.isValid(uid, max: WireIdentifier.userIDMax) else {
            throw ServerError(.uidInvalid, "A uid is 1–\(WireIdentifier.userIDMax) characters of \(WireIdentifier.characters).")
        }
    }

    /// An avatar is a picture's address that apps put in `<img src>` and links: an http(s) URL
    /// of at most 2,048 characters with no spaces or control characters — never `javascript:`
    /// or `data:`, and never cut short to fit (the old update did, silently).
    func validate(avatar: String?) throws {
        guard let avatar else { return }
        let lower = avatar.lowercased()
        guard avatar.utf8.count <= 2048, lower.hasPrefix("https://") || lower.hasPrefix("http://"),
              !avatar.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let url = URL(string: avatar), url.host?.isEmpty == false
        else { throw ServerError.badRequest("avatar must be an http:// or https:// URL of at most 2048 characters.") }
    }

    func validate(sessionId: String) throws {
        guard WireIdentifier.isValid(sessionId, max: WireIdentifier.sessionIDMax) else {
            throw ServerError(.sessionIdInvalid, "A session id is 1–\(WireIdentifier.sessionIDMax) characters of \(WireIdentifier.characters).")
        }
    }

    /// A name as others' screens will show it (`DisplayText.name`: no control characters or
    /// terminal escapes, no bidi overrides); nil when nothing printable is left.
    func clean(_ s: String?) -> String? { s.flatMap { DisplayText.name($0) } }

    func decode<T: Decodable>(_ r: HTTPRequest) throws -> T {
        guard !r.body.isEmpty else { throw ServerError.badRequest("A JSON body is required.") }
        do { return try JSONDecoder().decode(T.self, from: Data(r.body)) } catch let error as DecodingError {
            throw ServerError.badRequest(Self.describe(error, in: Data(r.body)))
        } catch {
            throw ServerError.badRequest("The body is not valid JSON.")
        }
    }

    /// What was wrong with a body, in the terms of its fields (`JSONFieldProblem`): `name must
    /// be a string.`, `uid is required.`, `The body is not valid JSON.`
    static func describe(_ error: DecodingError, in body: Data) -> String {
        if let problem = JSONFieldProblem.describe(error, in: body) {
            // (A field's name keeps its case; the one problem that starts with a word, a sentence's.)
            return problem == JSONFieldProblem.numberNotWhole ? "A" + problem.dropFirst() : problem
        }
        switch error {
        case .typeMismatch, .valueNotFound: return "The body must be a JSON object."
        default: return "The body is not valid JSON."
        }
    }

    func ok<T: Encodable>(_ data: T) -> HTTPResponse {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? enc.encode(["data": data])) ?? Data("{}".utf8)
        return HTTPResponse(status: 200, contentType: "application/json", body: Array(body))
    }
}


import CallsCore
import CallsRelay
import CallsSecurity
import CallsTransport
import CallsWebRTC
import Foundation
import Synchronization

/// Browsers' media: one UDP port where every browser leg's bundled transport arrives (ICE-lite
/// checks, DTLS, SRTP/SRTCP — RFC 7983 keeps them apart), each leg a `WebRTCPeer` that is its
/// participant's tunnelled member on the relay.
///
/// ```
///  browser ─UDP─▶ reader thread ─▶ STUN: ICELiteResponder (reply; a check of our own to the
///                               │         address; its response: media go there; the media
///                               │         address asked again for its consent: ConsentFreshness)
///                               └─▶ by address: WebRTCPeer.receive ─▶ DTLS replies ─UDP─▶ browser
///                                                                 └─▶ native SRTP ─▶ MediaRelay.receiveTunnelled
///  MediaRelay workers ─ tunnel sink ─▶ deliver: WebRTCPeer.fromRoom ─UDP─▶ browser
///  rooms' queue ─▶ answer (offer → SDP answer), observe (keys, roster, reports), remove
/// ```
///
/// Thread rules: `answer`, `observe`, `remove` on the rooms' queue; `deliver` on relay workers;
/// the reader thread (`callroom.webrtc`) owns the responder. The legs' table is behind one lock;
/// each leg's media state behind the peer's own.
final class WebRTCGateway: Sendable {
    /// Counted for /metrics.
    final class Counters: Sendable {
        let received = Atomic<UInt64>(0)
        let sent = Atomic<UInt64>(0)
        let toRoom = Atomic<UInt64>(0)
        let stunAnswered = Atomic<UInt64>(0)
        let stunRefused = Atomic<UInt64>(0)
        let unknownSource = Atomic<UInt64>(0)
        /// Packets a leg did not pass on, by reason.
        let dropped: [WebRTCPeer.Drop: Count] = Dictionary(uniqueKeysWithValues: WebRTCPeer.Drop.allCases.map { ($0, Count()) })
        let handshakes = Atomic<UInt64>(0)
        let handshakeFailures = Atomic<UInt64>(0)
        /// Flights resent when their timer ran out (the browser did not answer in time).
        let handshakeRetransmits = Atomic<UInt64>(0)
        /// Our own checks of browsers' addresses: sent (resends too), answered, given up.
        let addressChecksSent = Atomic<UInt64>(0)
        let addressChecksAnswered = Atomic<UInt64>(0)
        let addressChecksUnanswered = Atomic<UInt64>(0)
        /// Legs whose media stopped: their address answered no consent check for the timeout.
        let consentExpired = Atomic<UInt64>(0)

        final class Count: Sendable { let value = Atomic<UInt64>(0) }
        func drop(_ d: WebRTCPeer.Drop) { dropped[d]?.value.add(1, ordering: .relaxed) }
    }

    /// One browser's leg and what the gateway keeps for it.
    private struct Leg: Sendable {
        let peer: WebRTCPeer
        /// The signalling connection its offers came on (the latest: a resumed participant's is new).
        var connection: ConnectionID
        /// The relay's tunnel id of its participant (the table's key).
        let tunnel: UInt64
        /// The browser's participant (for the log).
        let pid: String
        /// The browser's side of the transport, from its offer: a new one (another peer
        /// connection on the same page: a new certificate, new ICE credentials) needs a new leg.
        let remoteFingerprint: String
        let remoteUfrag: String?
        /// The browser's `ice-pwd`: our checks of its addresses are signed with it.
        let remotePassword: String?
        /// Which room sender each receiving section (mid) carries (their pid).
        var assignment: [String: String] = [:]
        /// Native video SSRC → pid, for the browser's keyframe requests.
        var videoOwner: [UInt32: String] = [:]
        /// What the browser's video may use (REMB), adapted from its receivers' reports.
        var bitsPerSecond: UInt64 = WebRTCGateway.startBitsPerSecond
        /// Keyframe requests forwarded lately (at most two a second per leg).
        var lastKeyframe: UInt64 = 0
        /// The addresses its checks passed from, oldest first (`maxAddressesPerLeg` at most).
        var addresses: [SocketAddress] = []
        /// Of those, the ones that answered a check of ours, with when they last did: only they
        /// carry its media (while that answer is within the consent timeout).
        var verified: [SocketAddress: UInt64] = [:]
    }

    /// Legs by their tunnel id (the relay's name for the participant: `WebRTCOfferRequest.tunnel`);
    /// the signalling connection's leg — in a cluster the connection may be on another node, and
    /// its node-local id may equal one of ours, so connections are looked up whole.
    private struct Table {
        var legs: [UInt64: Leg] = [:]
        var byConnection: [ConnectionID: UInt64] = [:]
        var byUfrag: [String: UInt64] = [:]
        var byAddress: [SocketAddress: UInt64] = [:]

        /// `address` passed a check of `tunnel`'s leg: its packets are the leg's from now on. Past
        /// `maxAddressesPerLeg` the leg's oldest address goes — never `current`, the one its
        /// media go to.
        mutating func checked(_ address: SocketAddress, for tunnel: UInt64, current: SocketAddress?) {
            guard var leg = legs[tunnel] else { return }
            leg.addresses.removeAll { $0 == address }
            leg.addresses.append(address)
            if leg.addresses.count > WebRTCGateway.maxAddressesPerLeg, let i = leg.addresses.firstIndex(where: { $0 != current }) {
                let old = leg.addresses.remove(at: i)
                leg.verified[old] = nil
                if byAddress[old] == tunnel { byAddress[old] = nil }
            }
            legs[tunnel] = leg
            byAddress[address] = tunnel
        }

        /// `address` no longer consents to `tunnel`'s media: it must answer a check of ours again
        /// before it carries them. The leg, when it still has that address.
        mutating func unverified(_ address: SocketAddress, for tunnel: UInt64) -> Leg? {
            guard var leg = legs[tunnel], leg.verified.removeValue(forKey: address) != nil else { return nil }
            legs[tunnel] = leg
            return leg
        }

        /// `address` answered a check of ours for `tunnel`'s leg: its peer, when the leg still
        /// takes packets from it.
        mutating func verified(_ address: SocketAddress, for tunnel: UInt64, at now: UInt64) -> Leg? {
            guard var leg = legs[tunnel], leg.addresses.contains(address) else { return nil }
            leg.verified[address] = now
            legs[tunnel] = leg
            return leg
        }
    }

    static let startBitsPerSecond: UInt64 = 800_000
    static let minBitsPerSecond: UInt64 = 150_000
    static let maxBitsPerSecond: UInt64 = 2_500_000
    /// The most browser legs one server holds (each has DTLS and four SRTP sessions).
    static let maxLegs = 500
    /// The most addresses one leg's packets are taken from. A browser checks from a handful
    /// (host, reflexive and relayed candidates, IPv4 and IPv6); without a bound, one browser
    /// holding its leg's password could add an entry for every source port it sends a check from.
    static let maxAddressesPerLeg = 8

    let port: Int
    /// The address in the answer's candidate (`mediaPublicAddress`, else the listening host).
    let candidateAddress: String
    let counters = Counters()
    private let socket: UDPSocket
    private let identity: TLSIdentity
    private let relay: MediaRelay
    private let log: ServerLog
    private let table = Locked(Table())
    private let stopping = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Where a browser's keyframe request goes (the rooms: `requestKeyframe` from its connection).
    private let keyframe: @Sendable (ConnectionID, String) -> Void
    /// Consent freshness's interval and timeout (the relay's: `mediaConsentIntervalMs`, `…TimeoutMs`).
    private let consentIntervalMs: Int, consentTimeoutMs: Int

    init(host: String, port: Int, candidateAddress: String, relay: MediaRelay, log: ServerLog,
         consentIntervalMs: Int = 5000, consentTimeoutMs: Int = 30_000,
         keyframe: @escaping @Sendable (ConnectionID, String) -> Void) throws {
        socket = try UDPSocket(host: host, port: port)
        self.port = Int(socket.localAddress.port)
        self.candidateAddress = candidateAddress
        identity = try SelfSignedCertificate.generate(commonName: "callroomd WebRTC", dnsNames: [], ipAddresses: [])
        self.relay = relay
        self.log = log
        self.keyframe = keyframe
        self.consentIntervalMs = consentIntervalMs
        self.consentTimeoutMs = consentTimeoutMs
    }

    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            ThreadName.set("callroom.webrtc")
            read()
            finished.signal()
        }
        thread.start()
    }

    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() }
        socket.close()
    }

    var legCount: Int { table.withLock { $0.legs.count } }

    // MARK: Rooms' queue

    /// Answers a browser's offer (a first one creates its leg; later ones renegotiate it).
    func answer(_ r: WebRTCOfferRequest) -> ServerMessage {
        let offer: SessionDescription
        do { offer = try SessionDescription.parse(r.sdp) } catch { return .error(code: .webrtcOfferRefused, message: error.description) }
        guard let fingerprint = offer.media.first(where: { !$0.isRejected })?.fingerprint, fingerprint.algorithm == "sha-256" else {
            return .error(code: .webrtcOfferRefused, message: "The offer names no sha-256 DTLS fingerprint.")
        }
        let local = r.tunnel
        let remoteUfrag = offer.media.first(where: { !$0.isRejected })?.iceUfrag
        // A renegotiation keeps its leg; a new peer connection (ICE restart, a new certificate) replaces it.
        let existing = table.withLock { t -> Leg? in
            guard let leg = t.legs[local] else { return nil }
            if leg.remoteFingerprint == fingerprint.value.uppercased() && leg.remoteUfrag == remoteUfrag { return leg }
            Self.drop(local, from: &t)
            return nil
        }
        guard existing != nil || legCount < Self.maxLegs else {
            return .error(code: .webrtcOfferRefused, message: "This server holds \(Self.maxLegs) browser legs already.")
        }
        var leg: Leg
        if let existing {
            leg = existing
        } else {
            do {
                let peer = try WebRTCPeer(connection: local, localUfrag: Crypto.randomHex(4), localPassword: Crypto.randomHex(12),
                                          identity: identity, remoteFingerprint: fingerprint.value, ownKey: r.ownKey,
                                          negotiated: .init(opus: nil, vp8: nil, levelID: nil))
                leg = Leg(peer: peer, connection: r.connection, tunnel: local, pid: r.pid, remoteFingerprint: fingerprint.value.uppercased(),
                          remoteUfrag: remoteUfrag, remotePassword: offer.media.first(where: { !$0.isRejected })?.icePwd)
            } catch {
                return .error(code: .webrtcOfferRefused, message: "The browser's leg could not be set up: \(error)")
            }
        }
        // Which sender each receiving section carries: kept while they stay, new ones to free sections.
        let senders = Dictionary(r.senders.map { ($0.pid, $0.key) }, uniquingKeysWith: { a, _ in a })
        var assignment = leg.assignment.filter { senders[$0.value] != nil }
        for kind in [SessionDescription.Kind.audio, .video] {
            let sections = offer.media.filter { $0.kind == kind && !$0.isRejected && $0.direction == .recvonly }.compactMap(\.mid)
            var waiting = r.senders.map(\.pid).filter { pid in !sections.contains { assignment[$0] == pid } }
            for mid in sections where assignment[mid] == nil && !waiting.isEmpty { assignment[mid] = waiting.removeFirst() }
            for mid in assignment.keys where offer.media.first(where: { $0.mid == mid })?.kind == kind && !sections.contains(mid) {
                assignment[mid] = nil
            }
        }
        var answerSenders: [String: SDPAnswer.Sender] = [:]
        var forwarding: Set<UInt32> = []
        for (mid, pid) in assignment {
            guard let key = senders[pid], let m = offer.media.first(where: { $0.mid == mid }) else { continue }
            let ssrc = m.kind == .audio ? key.ssrc : (key.videoSsrc ?? 0)
            answerSenders[mid] = SDPAnswer.Sender(ssrc: ssrc, stream: pid)
            forwarding.insert(ssrc)
        }
        let transport = SDPAnswer.Transport(iceUfrag: leg.peer.localUfrag, icePwd: leg.peer.localPassword, fingerprint: identity.fingerprint,
                                            address: candidateAddress, port: port, cname: "callroom", senders: answerSenders)
        let answer: SDPAnswer
        do { answer = try SDPAnswer(offer: offer, transport: transport, sessionID: local) } catch {
            return .error(code: .webrtcOfferRefused, message: error.description)
        }
        let firstAudio = offer.media.first { $0.kind == .audio && answer.payloadTypes[$0.mid ?? ""] != nil }
        let firstVideo = offer.media.first { $0.kind == .video && answer.payloadTypes[$0.mid ?? ""] != nil }
        let levelID = firstAudio?.extensions.first { $0.value == "urn:ietf:params:rtp-hdrext:ssrc-audio-level" }.map { UInt8(clamping: $0.key) }
        let negotiated = WebRTCPeer.Negotiated(opus: firstAudio.flatMap { answer.payloadTypes[$0.mid ?? ""] },
                                               vp8: firstVideo.flatMap { answer.payloadTypes[$0.mid ?? ""] }, levelID: levelID,
                                               red: firstAudio.flatMap { answer.redPayloadTypes[$0.mid ?? ""] })
        leg.peer.setKeys([r.ownKey] + r.senders.map(\.key))
        leg.peer.configure(negotiated, forwarding: forwarding)
        leg.assignment = assignment
        for s in r.senders { if let v = s.key.videoSsrc { leg.videoOwner[v] = s.pid } }
        leg.connection = r.connection
        let stored = leg
        table.withLock { t in
            if let before = t.legs[local]?.connection, before != stored.connection, t.byConnection[before] == local { t.byConnection[before] = nil }
            t.legs[local] = stored
            t.byConnection[stored.connection] = local
            t.byUfrag[stored.peer.localUfrag] = local
        }
        return .webrtcAnswer(sdp: answer.text)
    }

    /// A message the rooms send to `connection`: a browser leg's keys, roster and reports follow them.
    func observe(_ message: ServerMessage, to connection: ConnectionID) {
        switch message {
        case .mediaKeys, .participantJoined, .participantLeft, .videoReport, .keyframeRequest, .left: break
        default: return
        }
        guard let local = table.withLock({ $0.byConnection[connection] }) else { return }
        switch message {
        case .mediaKeys(let keys):
            table.withLock { $0.legs[local] }?.peer.setKeys(keys)
        case .participantJoined(let p):
            table.withLock { t in if let v = p.videoSsrc { t.legs[local]?.videoOwner[v] = p.pid } }
        case .participantLeft(let p, _):
            let peer = table.withLock { t -> WebRTCPeer? in
                if let v = p.videoSsrc { t.legs[local]?.videoOwner[v] = nil }
                return t.legs[local]?.peer
            }
            peer?.removeSender(ssrc: p.ssrc, videoSSRC: p.videoSsrc)
        case .videoReport(_, let loss, _):
            // The receivers' loss of this browser's video: REMB down by a third above 10 %, up a tenth under 2 %.
            table.withLock { t in
                guard var leg = t.legs[local] else { return }
                if loss > 10 { leg.bitsPerSecond = max(Self.minBitsPerSecond, leg.bitsPerSecond * 2 / 3) }
                if loss < 2 { leg.bitsPerSecond = min(Self.maxBitsPerSecond, leg.bitsPerSecond * 11 / 10) }
                t.legs[local] = leg
            }
        case .keyframeRequest:
            // Someone needs a keyframe of this browser's video: a PLI, which browsers answer.
            if let (bytes, to) = table.withLock({ $0.legs[local] })?.peer.keyframeRequest(), socket.send(bytes, to: to) {
                counters.sent.add(1, ordering: .relaxed)
            }
        case .left:
            remove(connection)
        default:
            break
        }
    }

    /// The connection's leg goes (it left, its connection closed).
    func remove(_ connection: ConnectionID) {
        table.withLock { t in if let tunnel = t.byConnection[connection] { Self.drop(tunnel, from: &t) } }
    }

    private static func drop(_ tunnel: UInt64, from t: inout Table) {
        guard let leg = t.legs.removeValue(forKey: tunnel) else { return }
        if t.byConnection[leg.connection] == tunnel { t.byConnection[leg.connection] = nil }
        t.byUfrag[leg.peer.localUfrag] = nil
        for a in leg.addresses where t.byAddress[a] == tunnel { t.byAddress[a] = nil }
    }

    // MARK: Relay workers

    /// A packet the relay sends to a tunnelled member: to its browser when it has a leg here
    /// (true), else false (the member's media go over its WebSocket).
    func deliver(_ bytes: [UInt8], to connection: UInt64) -> Bool {
        guard let peer = table.withLock({ $0.legs[connection]?.peer }) else { return false }
        switch bytes.withUnsafeBytes({ peer.fromRoom($0) }) {
        case .send(let out, let to):
            if socket.send(out, to: to) { counters.sent.add(1, ordering: .relaxed) }
        case .dropped(let why):
            counters.drop(why)
        }
        return true
    }

    // MARK: The reader thread

    /// What the reader thread owns: the ICE agent, our checks awaiting their responses, and the
    /// media addresses' consent.
    private struct Reader {
        let responder = ICELiteResponder()
        var checks = AddressChecks()
        var consent: ConsentFreshness
    }

    private func read() {
        var r = Reader(consent: ConsentFreshness(intervalMs: consentIntervalMs, timeoutMs: consentTimeoutMs))
        var buffer = [UInt8](repeating: 0, count: 2048)
        var lastTick = monotonicNanoseconds(), lastRetransmitCheck = lastTick
        while !stopping.load(ordering: .acquiring) {
            if socket.waitReadable(timeoutMs: 50) {
                while let (n, from) = buffer.withUnsafeMutableBytes({ socket.receive(into: $0) }) {
                    counters.received.add(1, ordering: .relaxed)
                    handle(Array(buffer[0..<n]), from: from, &r)
                }
            }
            let now = monotonicNanoseconds()
            if now - lastRetransmitCheck >= 50_000_000 {
                lastRetransmitCheck = now
                retransmitHandshakes()
                resendChecks(&r, now: now)
                keepConsent(&r, now: now)
            }
            if now - lastTick >= 1_000_000_000 {
                lastTick = now
                sendEstimates()
            }
        }
    }

    private func handle(_ datagram: [UInt8], from: SocketAddress, _ r: inout Reader) {
        if datagram.withUnsafeBytes({ ICELiteResponder.isSTUN($0) }) {
            let outcome = r.responder.respond(to: datagram, from: from) { ufrag in
                table.withLock { t in t.byUfrag[ufrag].flatMap { t.legs[$0]?.peer.localPassword } }
            }
            switch outcome {
            case .reply(let reply, let ufrag, let nominated):
                counters.stunAnswered.add(1, ordering: .relaxed)
                _ = socket.send(reply, to: from)
                checked(from, ufrag: ufrag, nominated: nominated, &r)
            case .answered(let transaction, let success):
                guard let check = r.checks.take(transaction) else { return }
                // Only the address asked answers for itself (the id went nowhere else).
                guard success, check.address == from else { return }
                counters.addressChecksAnswered.add(1, ordering: .relaxed)
                let now = monotonicNanoseconds()
                guard let leg = table.withLock({ $0.verified(from, for: check.tunnel, at: now) }) else { return }
                if check.nominate || leg.peer.address == nil { mediaGo(to: from, leg, answeredAt: now, &r) }
                r.consent.answered(from, for: leg.tunnel, media: leg.peer.address, now: now)
                for d in check.held where socket.send(d, to: from) { counters.sent.add(1, ordering: .relaxed) }
            case .refused:
                counters.stunRefused.add(1, ordering: .relaxed)
            }
            return
        }
        guard let leg = table.withLock({ t in t.byAddress[from].flatMap { t.legs[$0] } }) else {
            counters.unknownSource.add(1, ordering: .relaxed)
            return
        }
        for event in leg.peer.receive(datagram) {
            switch event {
            case .reply(let datagrams):
                // Only to an address that answered a check of ours: held until it has.
                guard leg.verified[from] != nil else {
                    if !r.checks.hold(datagrams, for: from, of: leg.tunnel) {
                        startCheck(of: from, for: leg, nominate: false, &r)
                        _ = r.checks.hold(datagrams, for: from, of: leg.tunnel)
                    }
                    continue
                }
                for d in datagrams where socket.send(d, to: from) { counters.sent.add(1, ordering: .relaxed) }
            case .connected(let profile):
                counters.handshakes.add(1, ordering: .relaxed)
                log.info("browser leg connected", ["pid": leg.pid, "connection": "\(leg.connection)", "srtp": "\(profile)", "from": "\(from)"])
            case .failed(let why):
                counters.handshakeFailures.add(1, ordering: .relaxed)
                log.warn("browser leg's DTLS handshake failed", ["pid": leg.pid, "connection": "\(leg.connection)", "why": why])
            case .toRoom(let bytes):
                counters.toRoom.add(1, ordering: .relaxed)
                relay.receiveTunnelled(bytes, from: leg.tunnel)
            case .keyframe(let ssrc):
                let now = monotonicNanoseconds()
                let target = table.withLock { t -> String? in
                    guard var l = t.legs[leg.tunnel], now - l.lastKeyframe >= 500_000_000, let pid = l.videoOwner[ssrc] else { return nil }
                    l.lastKeyframe = now
                    t.legs[leg.tunnel] = l
                    return pid
                }
                if let target { keyframe(leg.connection, target) }
            case .dropped(let why):
                counters.drop(why)
            }
        }
    }

    /// A check of a leg's passed from `from`: its packets are the leg's from now on. The first
    /// address, and one the browser nominates, carry the leg's media — once it has answered a
    /// check of ours: a browser that forges its source address cannot send a room's media to
    /// someone else's (it never sees the check to answer it).
    private func checked(_ from: SocketAddress, ufrag: String, nominated: Bool, _ r: inout Reader) {
        guard let leg = table.withLock({ t in t.byUfrag[ufrag].flatMap { t.legs[$0] } }) else { return }
        let current = leg.peer.address  // (only this thread nominates: it stays so)
        table.withLock { $0.checked(from, for: leg.tunnel, current: current) }
        guard nominated || current == nil, current != from else { return }
        // An address that answered lately carries them at once (its consent runs from that
        // answer: a nomination is no answer); another is asked first.
        if let answered = leg.verified[from], monotonicNanoseconds() < answered + r.consent.timeoutNanoseconds {
            return mediaGo(to: from, leg, answeredAt: answered, &r)
        }
        guard !r.checks.awaiting(from, for: leg.tunnel, nominate: nominated) else { return }
        startCheck(of: from, for: leg, nominate: nominated, &r)
    }

    /// Sends a check of ours to `address` (unless `maxOutstandingChecks` await already, or — not
    /// for consent — the address let one go unanswered lately: `AddressChecks.isQuiet`).
    private func startCheck(of address: SocketAddress, for leg: Leg, nominate: Bool, consent: Bool = false, _ r: inout Reader) {
        guard consent || !r.checks.isQuiet(address, for: leg.tunnel, now: monotonicNanoseconds()) else { return }
        guard let remoteUfrag = leg.remoteUfrag, let remotePassword = leg.remotePassword,
              let (request, transaction) = r.responder.check(username: "\(remoteUfrag):\(leg.peer.localUfrag)", password: remotePassword) else { return }
        var pending = AddressChecks.Pending(tunnel: leg.tunnel, address: address, request: request, sentAt: monotonicNanoseconds(), nominate: nominate)
        pending.consent = consent
        r.checks.add(transaction, pending)
        if socket.send(request, to: address) { counters.addressChecksSent.add(1, ordering: .relaxed) }
    }

    /// Consent freshness (`ConsentFreshness`): each leg's media address asked again when due —
    /// consent checks take at most two thirds of the agent's outstanding checks, the rest stay
    /// for new addresses — and a leg whose address let its consent run out sends no more media
    /// there (the browser's next check, from any of its addresses, starts a check of ours there;
    /// once that is answered the media go there again).
    private func keepConsent(_ r: inout Reader, now: UInt64) {
        let (check, expired) = r.consent.due(now: now)
        for due in check {
            guard let leg = table.withLock({ $0.legs[due.tunnel] }), leg.peer.address == due.address else {
                r.consent.forget(due.tunnel)
                continue
            }
            guard r.responder.outstandingChecks < ICELiteResponder.maxOutstandingChecks * 2 / 3,
                  !r.checks.awaiting(due.address, for: due.tunnel, nominate: false) else { continue }
            startCheck(of: due.address, for: leg, nominate: false, consent: true, &r)
        }
        for due in expired {
            guard let leg = table.withLock({ $0.unverified(due.address, for: due.tunnel) }), leg.peer.withdraw(from: due.address) else { continue }
            counters.consentExpired.add(1, ordering: .relaxed)
            log.warn("browser leg's media stop: its address answered no consent check", [
                "pid": leg.pid, "connection": "\(leg.connection)", "address": "\(due.address)", "timeout_ms": "\(consentTimeoutMs)"])
        }
    }

    private func mediaGo(to address: SocketAddress, _ leg: Leg, answeredAt: UInt64, _ r: inout Reader) {
        leg.peer.nominate(address)
        r.consent.answered(address, for: leg.tunnel, media: address, now: answeredAt)
        log.info("browser leg's media go to", ["pid": leg.pid, "connection": "\(leg.connection)", "to": "\(address)"])
    }

    /// Our checks unanswered past their timer are sent again, or given up.
    private func resendChecks(_ r: inout Reader, now: UInt64) {
        let (resend, givenUp) = r.checks.due(now: now)
        for check in resend where socket.send(check.request, to: check.address) { counters.addressChecksSent.add(1, ordering: .relaxed) }
        for t in givenUp {
            r.responder.forget(t)
            counters.addressChecksUnanswered.add(1, ordering: .relaxed)
        }
    }

    /// Handshakes whose flight went unanswered past its timer get it resent (100 ms, doubling):
    /// a lost flight would otherwise wait for the browser's own retransmission.
    private func retransmitHandshakes() {
        for leg in table.withLock({ Array($0.legs.values) }) where !leg.peer.isConnected {
            guard let (datagrams, to) = leg.peer.retransmitHandshake() else { continue }
            counters.handshakeRetransmits.add(1, ordering: .relaxed)
            for d in datagrams where socket.send(d, to: to) { counters.sent.add(1, ordering: .relaxed) }
        }
    }

    /// Each connected leg's REMB, once a second.
    private func sendEstimates() {
        for leg in table.withLock({ Array($0.legs.values) }) {
            if let (bytes, to) = leg.peer.remb(bitsPerSecond: leg.bitsPerSecond), socket.send(bytes, to: to) {
                counters.sent.add(1, ordering: .relaxed)
            }
        }
    }
}

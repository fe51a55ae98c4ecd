import CallsCore
import CallsStore
import CallsTransport
import Foundation

// MARK: Query parameters, viewers and list bodies
extension RESTRouter {
    /// nil for the operator (apikey: every call), else the uid whose calls are visible.
    func callViewer(_ r: HTTPRequest) throws -> String? {
        if r.header("apikey") != nil {
            try requireAPIKey(r)
            return nil
        }
        if r.header("authtoken") != nil { return try requireUser(r).uid }
        throw ServerError.emptyAPIKey
    }

    func paging(_ r: HTTPRequest) throws -> (Int, Int) {
        let page = try intParam(r, "page", default: 1, range: 1...1_000_000)
        let perPage = try intParam(r, "perPage", default: 30, range: 1...100)
        return (page, perPage)
    }

    func intParam(_ r: HTTPRequest, _ name: String, default d: Int, range: ClosedRange<Int>) throws -> Int {
        guard let s = r.query[name] else { return d }
        guard let v = Int(s), range.contains(v) else {
            throw ServerError.badRequest("Query parameter \(name) must be an integer in \(range.lowerBound)…\(range.upperBound).")
        }
        return v
    }

    func callFilter(_ r: HTTPRequest) throws -> CallFilter {
        var f = CallFilter()
        func oneOf(_ name: String, _ allowed: [String]) throws -> String? {
            guard let v = r.query[name] else { return nil }
            guard allowed.contains(v) else {
                throw ServerError.badRequest("Query parameter \(name) must be one of \(allowed.joined(separator: ", ")).")
            }
            return v
        }
        func bool(_ name: String) throws -> Bool? { try oneOf(name, ["true", "false"]).map { $0 == "true" } }
        f.type = try oneOf("type", ["audio", "video"])
        f.status = try oneOf("status", ["initiated", "ongoing", "ended", "busy", "rejected", "cancelled", "missed", "unanswered"])
        f.receiverType = try oneOf("receiverType", ["user", "group"])
        f.hasRecording = try bool("hasRecording")
        f.hasTranscription = try bool("hasTranscription")
        if let u = r.query["uid"] { try validate(uid: u); f.uid = u }
        if let g = r.query["guid"] ?? r.query["sessionId"] { try validate(sessionId: g); f.sessionId = g }
        if r.query["startedAt"] != nil { f.startedAt = Int64(try intParam(r, "startedAt", default: 0, range: 0...Int.max)) }
        if r.query["endedAt"] != nil { f.endedAt = Int64(try intParam(r, "endedAt", default: 0, range: 0...Int.max)) }
        if r.query["participantsCount"] != nil { f.participantsCount = try intParam(r, "participantsCount", default: 0, range: 0...100_000) }
        return f
    }

    func list<T: Encodable, P>(_ items: [T], _ page: Page<P>) -> HTTPResponse {
        let body = ListBody(data: items, meta: .init(pagination: .init(total: page.total, count: items.count, per_page: page.perPage,
                                                                       current_page: page.page, total_pages: page.totalPages)))
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return HTTPResponse(status: 200, contentType: "application/json", body: Array((try? enc.encode(body)) ?? Data("{}".utf8)))
    }
}

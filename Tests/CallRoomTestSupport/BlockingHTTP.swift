import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A blocking HTTP request for tests: status and the JSON object of the answer.
public enum BlockingHTTP {
    public struct Reply: @unchecked Sendable {
        public var status: Int
        public var json: [String: Any]
        /// The answer's body as text (for non-JSON answers such as /metrics).
        public var text = ""
        /// The raw body and the response headers (binary answers: recordings).
        public var body = Data()
        public var headers: [String: String] = [:]
        public var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
        public var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        public var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    }

    public static func request(_ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil) -> Reply {
        guard let u = URL(string: url) else { return Reply(status: 0, json: [:]) }
        var req = URLRequest(url: u)
        req.httpMethod = method
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        if let body { req.httpBody = Data(body.utf8) }
        let sem = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var reply = Reply(status: 0, json: [:])
        URLSession.shared.dataTask(with: req) { d, r, _ in
            let json = d.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
            let http = r as? HTTPURLResponse
            var headers: [String: String] = [:]
            for (k, v) in http?.allHeaderFields ?? [:] { if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v } }
            reply = Reply(status: http?.statusCode ?? 0, json: json, text: d.map { String(decoding: $0, as: UTF8.self) } ?? "",
                          body: d ?? Data(), headers: headers)
            sem.signal()
        }.resume()
        sem.wait()
        return reply
    }
}

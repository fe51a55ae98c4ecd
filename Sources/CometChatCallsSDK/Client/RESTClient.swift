import CallsTransport
import Foundation

/// Calls the CallRoom server's REST API over HTTP/1.1, or HTTPS verified with `trust` (libcurl,
/// one handle per request, run off the caller's thread). Safe from any thread.
package struct RESTClient: Sendable {
    let baseURL: URL
    let appID: String
    let trust: TLSTrust

    package init(baseURL: URL, appID: String, trust: TLSTrust = .system) {
        self.baseURL = baseURL
        self.appID = appID
        self.trust = trust
    }

    /// Sends a request and decodes `{"data": T}`; maps `{"error": {...}}` and transport failures
    /// to `CometChatCallException`.
    package func call<T: Decodable & Sendable>(_ method: String, _ path: String, headers: [String: String] = [:],
                                       body: [String: String]? = nil, as: T.Type) async throws(CometChatCallException) -> T {
        try await send(method, path, headers: headers, payload: body.flatMap { try? JSONSerialization.data(withJSONObject: $0) }.map { Array($0) }, as: T.self)
    }

    /// The same with a typed body (numbers stay numbers).
    package func call<T: Decodable & Sendable, B: Encodable>(_ method: String, _ path: String, headers: [String: String] = [:],
                                                             encodable body: B, as: T.Type) async throws(CometChatCallException) -> T {
        try await send(method, path, headers: headers, payload: (try? JSONEncoder().encode(body)).map { Array($0) }, as: T.self)
    }

    private func send<T: Decodable & Sendable>(_ method: String, _ path: String, headers: [String: String],
                                               payload: [UInt8]?, as: T.Type) async throws(CometChatCallException) -> T {
        guard let url = URL(string: path, relativeTo: baseURL) else {
            throw CometChatCallException(errorCode: CometChatCallException.apiError, errorDescription: "bad path \(path)")
        }
        var lines = ["Content-Type: application/json", "appId: \(appID)"]
        for (k, v) in headers.sorted(by: { $0.key < $1.key }) { lines.append("\(k): \(v)") }
        let (trust, base, target, requestHeaders) = (self.trust, baseURL.absoluteString, url.absoluteString, lines)
        let result: Result<(Data, Int), CometChatCallException> = await withCheckedContinuation { cont in
            DispatchQueue.global().async {
                let outcome: Result<CurlClient.Response, CurlError>
                do throws(CurlError) {
                    outcome = try CurlClient(trust: trust, version: .http2OverTLS).request(method, target, headers: requestHeaders, body: payload, timeoutMs: 10_000)
                } catch { outcome = .failure(error) }
                switch outcome {
                case .success(let r): cont.resume(returning: .success((Data(r.body), r.status)))
                case .failure(let e):
                    let why = e.isCertificateProblem
                        ? "the server's TLS certificate is not trusted (\(e.message)); give the CA file (--ca-file), or --insecure for a test server"
                        : e.message
                    cont.resume(returning: .failure(CometChatCallException(errorCode: CometChatCallException.networkError,
                                                                           errorDescription: "cannot reach \(base): \(why)")))
                }
            }
        }
        let (data, status) = try result.get()
        guard let env = try? JSONDecoder().decode(RESTEnvelope<T>.self, from: data) else {
            throw CometChatCallException(errorCode: CometChatCallException.apiError,
                                         errorDescription: "unexpected response (HTTP \(status)) from \(url.absoluteString)")
        }
        if let e = env.error { throw CometChatCallException(errorCode: e.code, errorDescription: e.message) }
        guard (200..<300).contains(status), let d = env.data else {
            throw CometChatCallException(errorCode: CometChatCallException.apiError, errorDescription: "HTTP \(status) without data")
        }
        return d
    }
}

private struct RESTEnvelope<T: Decodable>: Decodable {
    struct ErrorBody: Decodable { var code: String; var message: String }
    var data: T?
    var error: ErrorBody?
}

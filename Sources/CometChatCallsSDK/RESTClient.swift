import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Calls the CallRoom server's REST API over HTTP/1.1 (URLSession). Safe from any thread.
package struct RESTClient: Sendable {
    let baseURL: URL
    let appID: String

    package init(baseURL: URL, appID: String) {
        self.baseURL = baseURL
        self.appID = appID
    }

    /// Sends a request and decodes `{"data": T}`; maps `{"error": {...}}` and transport failures
    /// to `CometChatCallException`.
    package func call<T: Decodable & Sendable>(_ method: String, _ path: String, headers: [String: String] = [:],
                                       body: [String: String]? = nil, as: T.Type) async throws(CometChatCallException) -> T {
        guard let url = URL(string: path, relativeTo: baseURL) else {
            throw CometChatCallException(errorCode: CometChatCallException.apiError, errorDescription: "bad path \(path)")
        }
        var req = URLRequest(url: url, timeoutInterval: 10)
        req.httpMethod = method
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        req.setValue(appID, forHTTPHeaderField: "appId")
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        if let body { req.httpBody = try? JSONSerialization.data(withJSONObject: body) }
        let result: Result<(Data, Int), CometChatCallException> = await withCheckedContinuation { cont in
            let task = URLSession.shared.dataTask(with: req) { data, response, error in
                if let error {
                    cont.resume(returning: .failure(CometChatCallException(
                        errorCode: CometChatCallException.networkError,
                        errorDescription: "cannot reach \(baseURL.absoluteString): \(error.localizedDescription)")))
                    return
                }
                cont.resume(returning: .success((data ?? Data(), (response as? HTTPURLResponse)?.statusCode ?? 0)))
            }
            task.resume()
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

import CCurl
import Foundation

/// Why an outbound request failed before an HTTP status came back.
package struct CurlError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libcurl's code (`CURLE_OPERATION_TIMEDOUT` is 28).
    package var code: Int
    package var message: String
    package var description: String { "curl error \(code): \(message)" }
    package var isTimeout: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }
    /// The server's certificate was not trusted (or its name did not match).
    package var isCertificateProblem: Bool {
        code == Int(CURLE_PEER_FAILED_VERIFICATION.rawValue) || code == Int(CURLE_SSL_CACERT_BADFILE.rawValue)
    }
    /// The server's address is one this client may not reach (`refusedDestinations`).
    package static func refusedDestination(_ address: String) -> CurlError {
        CurlError(code: Int(CURLE_ABORTED_BY_CALLBACK.rawValue),
                  message: refusedPrefix + "\(address) is a link-local, multicast or unspecified address, or a cloud metadata service")
    }
    private static let refusedPrefix = "not sent: "
    package var isRefusedDestination: Bool { code == Int(CURLE_ABORTED_BY_CALLBACK.rawValue) && message.hasPrefix(Self.refusedPrefix) }
}

/// Outbound HTTP through libcurl: one easy handle, reused (keep-alive; HTTP/2 when a TLS server
/// offers it, multiplexed on one connection), owned by this object and freed with it. TLS
/// servers are verified against the system's CAs, a given CA file, or (`insecure`) not at all.
///
/// Thread rules: one thread at a time (its owner's; libcurl handles are not shared).
package final class CurlClient {
    package struct Response: Sendable, Equatable {
        package var status: Int
        /// Response headers, names lower-cased (the last value of a repeated name).
        package var headers: [String: String]
        package var body: [UInt8]
        /// 2 for HTTP/2, 1 for HTTP/1.x.
        package var httpMajorVersion: Int
    }

    /// Which HTTP versions a request may use.
    package enum Version: Sendable {
        /// HTTP/2 over TLS when the server offers it (ALPN), else HTTP/1.1 (webhooks).
        case http2OverTLS
        /// HTTP/2 only: a server that does not speak it is an error (APNs requires HTTP/2).
        case http2Required
    }

    /// `curl_global_init` once per process, before any handle (Swift runs a static's initialiser once).
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    private let handle: UnsafeMutableRawPointer
    /// A PEM bundle of CAs to trust instead of the system store (stand-ins in tests, private CAs).
    private let caFile: String?
    private let insecure: Bool
    private let version: Version

    /// Collects a response (libcurl's write and header callbacks append here). With `forward`,
    /// a 2xx reply's body goes there instead (`false` from it ends the transfer); any other
    /// status's body (an error document) is still kept.
    private final class Sink {
        let limit: Int
        let handle: UnsafeMutableRawPointer
        let forward: ((Int, UnsafeRawBufferPointer) -> Bool)?
        var bytes: [UInt8] = []
        var headers: [String: String] = [:]
        /// The blocks not to send to, and the address refused (for the error).
        var refused: [IPNetwork] = []
        var refusedAddress: String?
        init(limit: Int, handle: UnsafeMutableRawPointer, forward: ((Int, UnsafeRawBufferPointer) -> Bool)?) {
            self.limit = limit
            self.handle = handle
            self.forward = forward
        }
    }

    /// Addresses this client never sends a request to, checked on the address libcurl actually
    /// connected to (after the name was resolved: a name that resolves to one is refused too, as
    /// a redirect would be, were one followed) — `CurlError.refusedDestination`, nothing sent.
    /// Webhooks use `IPNetwork.neverDialled`.
    package var refusedDestinations: [IPNetwork] = []

    /// How long a transfer may take.
    package enum Deadline: Sendable {
        /// The whole exchange within this many milliseconds.
        case total(ms: Int)
        /// No end, but fewer than one byte a second for this many seconds ends it (a download
        /// of any size; the receiver's own pauses count too).
        case stall(seconds: Int)
    }

    package init(caFile: String? = nil, insecure: Bool = false, version: Version = .http2OverTLS) throws(CurlError) {
        guard Self.globalInit, let h = curl_easy_init() else { throw CurlError(code: -1, message: "curl_easy_init failed") }
        handle = h
        self.caFile = caFile
        self.insecure = insecure
        self.version = version
    }

    package convenience init(trust: TLSTrust, version: Version = .http2OverTLS) throws(CurlError) {
        try self.init(caFile: trust.caFile, insecure: trust.insecure, version: version)
    }

    deinit { curl_easy_cleanup(handle) }

    /// POSTs `body` to `url` with `headers` ("Name: value"), waiting at most `timeoutMs` for the
    /// whole exchange. Redirects are not followed (a webhook or a push service must answer itself).
    package func post(_ url: String, headers: [String], body: [UInt8], timeoutMs: Int) -> Result<Response, CurlError> {
        request("POST", url, headers: headers, body: body, timeoutMs: timeoutMs)
    }

    /// Signs every request with AWS Signature Version 4 (libcurl's `CURLOPT_AWS_SIGV4`): the
    /// provider string (`aws:amz:REGION:s3`) and the key pair. Nil: unsigned.
    package var awsSigV4: (provider: String, accessKey: String, secretKey: String)?

    /// Any method; `body` nil sends none; a response body is kept up to `bodyLimit` bytes.
    package func request(_ method: String, _ url: String, headers: [String], body: [UInt8]?, timeoutMs: Int,
                         bodyLimit: Int = 1 << 20) -> Result<Response, CurlError> {
        perform(method, url, headers: headers, body: body, deadline: .total(ms: timeoutMs), sink: Sink(limit: bodyLimit, handle: handle, forward: nil))
    }

    /// A GET whose 2xx body is handed to `body` (with the status) as it arrives — the `Response`
    /// then has none — never held whole: `body` returning false ends the transfer (a
    /// `CurlError`, code 23). Another status's body is kept (up to 64 KiB) as `request` keeps it.
    package func get(_ url: String, headers: [String], deadline: Deadline,
                     body: @escaping (_ status: Int, _ bytes: UnsafeRawBufferPointer) -> Bool) -> Result<Response, CurlError> {
        perform("GET", url, headers: headers, body: nil, deadline: deadline, sink: Sink(limit: 64 << 10, handle: handle, forward: body))
    }

    private func perform(_ method: String, _ url: String, headers: [String], body: [UInt8]?, deadline: Deadline,
                         sink: Sink) -> Result<Response, CurlError> {
        curl_easy_reset(handle)
        var list: UnsafeMutablePointer<curl_slist>?
        for h in headers { list = curl_slist_append(list, h) }
        defer { curl_slist_free_all(list) }
        let payload = body ?? []
        let code: CURLcode = payload.withUnsafeBytes { raw in
            _ = callroom_curl_set_string(handle, CURLOPT_URL, url)
            if body != nil {
                _ = callroom_curl_set_long(handle, CURLOPT_POST, 1)
                _ = callroom_curl_set_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                _ = callroom_curl_set_long(handle, CURLOPT_POSTFIELDSIZE, raw.count)
            }
            if method == "HEAD" {
                _ = callroom_curl_set_long(handle, CURLOPT_NOBODY, 1)  // (a HEAD reply's length names no body to wait for)
            } else if method != "POST" && !(method == "GET" && body == nil) {
                _ = callroom_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, method)
            }
            _ = callroom_curl_set_slist(handle, CURLOPT_HTTPHEADER, list)
            switch deadline {
            case .total(let ms):
                _ = callroom_curl_set_long(handle, CURLOPT_TIMEOUT_MS, ms)
                _ = callroom_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(ms, 5000))
            case .stall(let seconds):
                _ = callroom_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
                _ = callroom_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, seconds)
                _ = callroom_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, 5000)
            }
            _ = callroom_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = callroom_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 0)
            switch version {
            case .http2OverTLS: _ = callroom_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            case .http2Required: _ = callroom_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_0))
            }
            if let caFile { _ = callroom_curl_set_string(handle, CURLOPT_CAINFO, caFile) }
            if let aws = awsSigV4 {
                _ = callroom_curl_set_string(handle, CURLOPT_AWS_SIGV4, aws.provider)
                _ = callroom_curl_set_string(handle, CURLOPT_USERNAME, aws.accessKey)
                _ = callroom_curl_set_string(handle, CURLOPT_PASSWORD, aws.secretKey)
            }
            if insecure {
                _ = callroom_curl_set_long(handle, CURLOPT_SSL_VERIFYPEER, 0)
                _ = callroom_curl_set_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
            }
            _ = callroom_curl_set_write(handle) { data, size, count, user in
                guard let data, let user else { return 0 }
                let sink = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
                let n = size * count
                let status = sink.forward == nil ? 0 : callroom_curl_response_code(sink.handle)
                if let forward = sink.forward, (200..<300).contains(status) {
                    return forward(status, UnsafeRawBufferPointer(start: data, count: n)) ? n : 0
                }
                if sink.bytes.count < sink.limit {
                    sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n).prefix(sink.limit - sink.bytes.count))
                }
                return n
            }
            _ = callroom_curl_set_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(sink).toOpaque())
            _ = callroom_curl_set_header(handle) { data, size, count, user in
                guard let data, let user else { return 0 }
                let sink = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
                let n = size * count
                let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
                if let colon = line.firstIndex(of: ":"), sink.headers.count < 100 {
                    let name = line[..<colon].lowercased()
                    sink.headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                }
                return n
            }
            _ = callroom_curl_set_pointer(handle, CURLOPT_HEADERDATA, Unmanaged.passUnretained(sink).toOpaque())
            if !refusedDestinations.isEmpty {
                sink.refused = refusedDestinations
                _ = callroom_curl_set_prereq(handle) { user, primaryIP, _, _, _ in
                    guard let user, let primaryIP else { return Int32(CURL_PREREQFUNC_ABORT) }
                    let sink = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
                    let ip = String(cString: primaryIP)
                    guard let address = IPAddress(ip), !sink.refused.contains(where: { $0.contains(address) }) else {
                        sink.refusedAddress = ip
                        return Int32(CURL_PREREQFUNC_ABORT)
                    }
                    return Int32(CURL_PREREQFUNC_OK)
                }
                _ = callroom_curl_set_pointer(handle, CURLOPT_PREREQDATA, Unmanaged.passUnretained(sink).toOpaque())
            }
            return curl_easy_perform(handle)
        }
        if let address = sink.refusedAddress { return .failure(.refusedDestination(address)) }
        guard code == CURLE_OK else {
            return .failure(CurlError(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code))))
        }
        let v = callroom_curl_http_version(handle)
        return .success(Response(status: callroom_curl_response_code(handle), headers: sink.headers, body: sink.bytes,
                                 httpMajorVersion: v == Int(CURL_HTTP_VERSION_2_0) ? 2 : v == Int(CURL_HTTP_VERSION_3) ? 3 : 1))
    }
}

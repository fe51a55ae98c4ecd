import Foundation

/// The APNs + FCM stand-in (`scripts/push-standin.py`, HTTP/2 over TLS with a test CA) in a
/// child process: fixtures (CA, server certificate, `.p8` key, service-account key) in `dir`,
/// one JSON line per request it answered.
public final class PushStandIn {
    public struct Request {
        public var service: String
        public var path: String
        public var headers: [String: String]
        public var body: String
        public var status: Int
        public var reason: String?
        public var at: Double
    }

    public let dir: String
    public let port: Int
    public let teamId = "TEAM123456"
    public let keyId = "KEY1234567"
    public let bundle = "com.example.callroom"
    public let project = "callroom-test"
    private let process: ManagedProcess
    private let log: String


    /// Writes fixtures into `dir` and starts serving; `options` are the script's serve flags
    /// (`--unregistered TOKEN`, `--throttle N`, `--expire-first-provider-token`, …).
    public init(dir: String, options: [String] = []) throws {
        self.dir = dir
        log = dir + "/requests.jsonl"
        let script = BuiltProducts.packageRoot + "/scripts/push-standin.py"
        let fixtures = try ManagedProcess("/usr/bin/env", ["python3", script, "fixtures", dir])
        guard fixtures.wait(timeout: 30) == 0 else {
            throw TestFailure("push stand-in fixtures failed (run scripts/install-python-deps.sh: h2, cryptography): \(fixtures.errorOutput)")
        }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process = try ManagedProcess("/usr/bin/env", ["python3", script, "serve", dir, "--log", log, "--team-id", teamId, "--key-id", keyId,
                                                      "--bundle", bundle, "--project", project] + options)
        guard let line = process.waitForLine(timeout: 15, { Int($0) != nil }), let p = Int(line) else {
            throw TestFailure("push stand-in did not start: \(process.errorOutput)")
        }
        port = p
    }

    public var endpoint: String { "https://127.0.0.1:\(port)" }
    public var caFile: String { dir + "/ca.pem" }
    public var apnsKeyFile: String { dir + "/apns.p8" }
    public var serviceAccountFile: String { dir + "/service-account.json" }

    public var requests: [Request] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Request(service: o["service"] as? String ?? "", path: o["path"] as? String ?? "", headers: o["headers"] as? [String: String] ?? [:],
                           body: o["body"] as? String ?? "", status: o["status"] as? Int ?? 0, reason: o["reason"] as? String,
                           at: o["at"] as? Double ?? 0)
        }
    }

    /// Waits until `n` requests of `service` (apns, fcm, oauth; nil: any) have been answered.
    @discardableResult
    public func waitFor(_ n: Int, service: String? = nil, timeout: TimeInterval = 15) -> [Request] {
        let wanted = { self.requests.filter { service == nil || $0.service == service } }
        return eventuallyValue(timeout, poll: 0.02) { wanted().count >= n ? wanted() : nil } ?? wanted()
    }

    public func stop() {
        process.signal(SIGTERM)
        _ = process.wait(timeout: 5)
    }
}

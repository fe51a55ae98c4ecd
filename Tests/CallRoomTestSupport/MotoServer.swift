import Foundation
#if canImport(Glibc)
import Glibc  // (SIGTERM, SIGKILL)
#endif

/// moto's S3-compatible server (PyPI `moto[server]`, installed by scripts/install-python-deps.sh
/// into `.build/moto-venv`) on a free loopback port, for object-storage tests; stopped on `stop()`
/// or deinit. Any access key works with it (moto checks signatures only in its IAM mode).
///
/// Thread rules: one test thread drives it.
public final class MotoServer {
    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    private let process: ManagedProcess

    /// The moto_server executable (`CALLROOM_MOTO_SERVER` overrides), or nil when not installed.
    public static var binary: String? {
        let candidates = [ProcessInfo.processInfo.environment["CALLROOM_MOTO_SERVER"],
                          FileManager.default.currentDirectoryPath + "/.build/moto-venv/bin/moto_server"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// - Parameter checkingCredentials: moto's IAM mode — every request but the first three (which
    ///   `createCredentials` spends) must be signed with a key moto issued, as S3 itself checks.
    public init(checkingCredentials: Bool = false) throws {
        guard let binary = Self.binary else { throw TestFailure("moto_server is not installed (scripts/install-python-deps.sh)") }
        port = try FreePort.tcp()
        var environment = ProcessInfo.processInfo.environment
        if checkingCredentials { environment["INITIAL_NO_AUTH_ACTION_COUNT"] = "3" }
        process = try ManagedProcess(binary, ["-H", "127.0.0.1", "-p", String(port)], environment: environment)
        let url = endpoint
        guard eventually(30, poll: 0.1, { BlockingHTTP.request("GET", url + "/moto-api/").status > 0 }) else {
            process.signal(SIGKILL)
            throw TestFailure("moto_server did not start: \(process.errorOutput.suffix(2000))")
        }
    }

    /// An IAM user allowed every S3 action and its access key (moto's IAM API, through the venv's
    /// boto3): the three requests a server `checkingCredentials` lets through unsigned.
    public func createCredentials() throws -> (id: String, secret: String) {
        guard let binary = Self.binary else { throw TestFailure("moto_server is not installed") }
        let python = (binary as NSString).deletingLastPathComponent + "/python"
        let script = """
            import boto3, json, sys
            iam = boto3.client("iam", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
            iam.create_user(UserName="callroom")
            iam.put_user_policy(UserName="callroom", PolicyName="s3", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName="callroom")["AccessKey"]
            print(json.dumps({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}))
            """
        let p = try ManagedProcess(python, ["-c", script, endpoint])
        guard p.wait(timeout: 30) == 0, let line = p.output.last,
              let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String],
              let id = object["id"], let secret = object["secret"] else {
            throw TestFailure("moto's IAM did not issue a key: \(p.errorOutput.suffix(1000))")
        }
        return (id, secret)
    }

    deinit { stop() }

    public func stop() {
        process.signal(SIGTERM)
        if process.wait(timeout: 5) == nil { process.signal(SIGKILL); _ = process.wait(timeout: 5) }
    }
}

/// `scripts/s3-fault-proxy.py` in front of an S3-compatible server: forwards every request,
/// but answers the first `failFirst` object writes under `recordings/` and `transcripts/` with
/// S3's 503 ServiceUnavailable, and holds such writes unanswered while `stallWhile` exists.
/// `lines` are its "<outcome> <METHOD> <path>" reports.
///
/// Thread rules: one test thread drives it.
public final class S3FaultProxy {
    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    private let process: ManagedProcess
    public var lines: [String] { process.output }

    public init(upstream: String, failFirst: Int = 0, stallWhile: String? = nil) throws {
        port = try FreePort.tcp()
        var arguments = [BuiltProducts.packageRoot + "/scripts/s3-fault-proxy.py", "--port", String(port), "--upstream", upstream,
                         "--fail-first", String(failFirst)]
        if let stallWhile { arguments += ["--stall-while", stallWhile] }
        process = try ManagedProcess("/usr/bin/env", ["python3"] + arguments)
        guard process.waitForLine(timeout: 15, { $0 == "ready" }) != nil else {
            process.signal(SIGKILL)
            throw TestFailure("s3-fault-proxy did not start: \(process.errorOutput.suffix(1000))")
        }
    }

    deinit { stop() }

    public func stop() {
        process.signal(SIGTERM)
        if process.wait(timeout: 5) == nil { process.signal(SIGKILL); _ = process.wait(timeout: 5) }
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's `firefox-esr`, headless, driven over Marionette (its own automation protocol: TCP on
/// loopback, each message `LENGTH:JSON`; commands `[0, id, name, params]`, replies
/// `[1, id, error, result]`) — no geckodriver, no pip. Fake media devices (a tone and a moving
/// picture) with permission prompts answered yes, set in the profile's `user.js`.
///
/// Firefox gathers no loopback ICE candidates, so a call test runs it in a network namespace
/// (`namespace`) and callroomd on the host side of the veth pair; `secureHosts` lists the plain-HTTP
/// origins it treats as secure (getUserMedia needs one). Marionette then listens on the
/// namespace's loopback: the socket to it is made inside the namespace (`setns` on a thread of
/// its own). Its profile lives in a temporary directory removed on `close()`.
///
/// Thread rules: one test thread drives it.
public final class HeadlessFirefox {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let process: ManagedProcess
    private let profile: String
    private let socket: Int32
    private var nextID = 1
    private var pending: [UInt8] = []

    /// The firefox binary (`CALLROOM_FIREFOX` overrides), or nil when none is installed.
    public static var binary: String? {
        let candidates = [ProcessInfo.processInfo.environment["CALLROOM_FIREFOX"], "/usr/bin/firefox-esr", "/usr/bin/firefox"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// - Parameters:
    ///   - namespace: run it in this network namespace (`ip netns exec`).
    ///   - secureHosts: plain-HTTP hosts it treats as secure contexts.
    public init(namespace: String? = nil, secureHosts: [String] = []) throws {
        guard let binary = Self.binary else { throw Failure(description: "firefox-esr is not installed (scripts/install-deps.sh)") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-firefox-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        let prefs: [(String, String)] = [
            ("marionette.port", "0"),  // a free port, written to MarionetteActivePort
            ("media.navigator.streams.fake", "true"), ("media.navigator.permission.disabled", "true"),
            ("media.autoplay.default", "0"), ("media.autoplay.block-webaudio", "false"), ("media.autoplay.blocking_policy", "0"),
            ("media.peerconnection.ice.obfuscate_host_addresses", "false"),
            ("dom.securecontext.allowlist", String(reflecting: secureHosts.joined(separator: ","))),
            ("browser.shell.checkDefaultBrowser", "false"), ("datareporting.policy.dataSubmissionEnabled", "false"),
            ("toolkit.telemetry.reportingpolicy.firstRun", "false"), ("app.update.disabledForTesting", "true"),
            ("browser.startup.homepage_override.mstone", "\"ignore\""), ("network.captive-portal-service.enabled", "false"),
        ]
        try prefs.map { "user_pref(\"\($0.0)\", \($0.1));" }.joined(separator: "\n")
            .write(toFile: profile + "/user.js", atomically: true, encoding: .utf8)
        let command = [binary, "--headless", "--marionette", "--no-remote", "--profile", profile]
        process = try namespace.map { try ManagedProcess("/usr/sbin/ip", ["netns", "exec", $0] + command) } ?? ManagedProcess(command[0], Array(command.dropFirst()))
        let portFile = profile + "/MarionetteActivePort"
        var port: UInt16?
        _ = eventually(60, poll: 0.1) {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { UInt16($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return port != nil
        }
        guard let port else {
            process.signal(SIGKILL)
            throw Failure(description: "Marionette did not start:\n\(process.output.suffix(20).joined(separator: "\n"))")
        }
        socket = try Self.connect(port: port, namespace: namespace)
        _ = try read()  // the greeting: {"applicationType": "gecko", "marionetteProtocol": 3}
        _ = try call("WebDriver:NewSession", ["capabilities": ["alwaysMatch": ["pageLoadStrategy": "normal"]]], timeout: 30)
    }

    deinit { close() }

    private var closed = false

    /// Ends the browser and removes its profile.
    public func close() {
        guard !closed else { return }
        closed = true
        _ = try? call("Marionette:Quit", [:], timeout: 5)
        Glibc.close(socket)
        if process.wait(timeout: 10) == nil {
            process.signal(SIGKILL)
            _ = process.wait(timeout: 5)
        }
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Loads `url` (returns when the page has loaded).
    public func open(_ url: String) throws {
        _ = try call("WebDriver:Navigate", ["url": url], timeout: 30)
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value (JSON-able).
    public func evaluate(_ expression: String, timeout: TimeInterval = 20) throws -> Any? {
        let reply = try call("WebDriver:ExecuteScript", ["script": "return (\(expression));", "args": [] as [Any]], timeout: timeout)
        return reply["value"].flatMap { $0 is NSNull ? nil : $0 }
    }

    /// Polls `condition` (a JS boolean expression) until true or `timeout`.
    public func waitFor(_ condition: String, timeout: TimeInterval) -> Bool {
        eventually(timeout, poll: 0.1) { (try? evaluate("Boolean(\(condition))", timeout: 5)) as? Bool == true }
    }

    /// Sends one command and waits for its reply.
    @discardableResult
    public func call(_ name: String, _ params: [String: Any], timeout: TimeInterval = 20) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        let body = try JSONSerialization.data(withJSONObject: [0, id, name, params] as [Any])
        let bytes = Array("\(body.count):".utf8) + Array(body)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "Marionette's socket closed (\(name))") }
            written += n
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            guard let reply = try read(until: deadline) as? [Any], reply.count == 4, reply[1] as? Int == id else { continue }
            if let error = reply[2] as? [String: Any] {
                throw Failure(description: "\(name): \(error["error"] ?? "") \(error["message"] ?? "")")
            }
            return reply[3] as? [String: Any] ?? [:]
        }
    }

    /// One `LENGTH:JSON` message.
    private func read(until deadline: Date = Date().addingTimeInterval(30)) throws -> Any {
        while true {
            if let colon = pending.firstIndex(of: UInt8(ascii: ":")), let length = Int(String(decoding: pending[..<colon], as: UTF8.self)),
               pending.count > colon + length {
                let body = Data(pending[(colon + 1)...(colon + length)])
                pending.removeSubrange(...(colon + length))
                return try JSONSerialization.jsonObject(with: body)
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "no reply from Marionette in time (\(pending.count) bytes pending: \(String(decoding: pending.prefix(200), as: UTF8.self)))") }
            var p = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(left, 1) * 1000)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "Firefox exited:\n\(process.output.suffix(20).joined(separator: "\n"))") }
            pending += chunk[0..<n]
        }
    }

    /// A TCP connection to 127.0.0.1:`port` — in `namespace`'s network when given: the socket is
    /// made on a thread that joins the namespace (`setns` changes only the calling thread) and ends.
    private static func connect(port: UInt16, namespace: String?) throws -> Int32 {
        final class Outcome: @unchecked Sendable { var fd: Int32 = -1; var error = "" }  // written before the semaphore, read after
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            if let namespace {
                // setns(2) is a GNU extension Glibc's module leaves out: looked up by name.
                typealias SetNS = @convention(c) (Int32, Int32) -> Int32
                let cloneNewNet: Int32 = 0x4000_0000
                let ns = Glibc.open("/var/run/netns/\(namespace)", O_RDONLY)
                guard ns >= 0, let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns"),
                      unsafeBitCast(symbol, to: SetNS.self)(ns, cloneNewNet) == 0 else { outcome.error = "cannot enter namespace \(namespace): errno \(errno)"; return }
                Glibc.close(ns)
            }
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { outcome.error = "cannot connect to Marionette on port \(port): errno \(errno)"; Glibc.close(fd); return }
            outcome.fd = fd
        }
        thread.start()
        done.wait()
        guard outcome.fd >= 0 else { throw Failure(description: outcome.error) }
        return outcome.fd
    }
}

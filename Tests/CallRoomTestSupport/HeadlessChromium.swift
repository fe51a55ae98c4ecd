import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's `chromium`, headless, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: requests on descriptor 3, replies and events on 4, each message
/// JSON ended by a NUL) — no WebSocket, no driver binary. Fake media devices: the microphone
/// plays a WAV file, the camera a test pattern; permission prompts are answered yes (unless
/// `denyMedia`). Its profile lives in a temporary directory removed on `close()`.
///
/// Thread rules: one test thread drives it.
public final class HeadlessChromium {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let profile: String
    private var nextID = 1
    private var pending: [UInt8] = []
    /// Events seen while waiting for replies (method and params), oldest first.
    public private(set) var events: [(method: String, params: [String: Any])] = []

    /// The chromium binary (`CALLROOM_CHROMIUM` overrides), or nil when none is installed.
    public static var binary: String? {
        let candidates = [ProcessInfo.processInfo.environment["CALLROOM_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// - Parameters:
    ///   - audioFile: a WAV the fake microphone plays (looped); nil: Chromium's beep.
    ///   - denyMedia: answer permission prompts no (the page sees `NotAllowedError`).
    ///   - windowSize: the viewport, `"390,844"` for a phone.
    ///   - launcher: run it through this (`ip netns exec NAME`: in another network namespace).
    public init(audioFile: String? = nil, denyMedia: Bool = false, windowSize: String = "1280,800", extraFlags: [String] = [],
                launcher: [String] = []) throws {
        guard let binary = Self.binary else { throw Failure(description: "chromium is not installed (scripts/install-deps.sh)") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-chromium-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        var flags = ["--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
                     "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=\(profile)", "--window-size=\(windowSize)",
                     "--use-fake-device-for-media-stream", "--autoplay-policy=no-user-gesture-required",
                     "--disable-features=WebRtcHideLocalIpsWithMdns", "--mute-audio"]
        flags.append(denyMedia ? "--deny-permission-prompts" : "--use-fake-ui-for-media-stream")
        if let audioFile { flags.append("--use-file-for-fake-audio-capture=\(audioFile)") }
        flags += extraFlags
        flags.append("about:blank")
        var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw Failure(description: "pipe: \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let log = profile + "/chromium.log"
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 4)
        for fd in [toChild[0], toChild[1], fromChild[0], fromChild[1]] where fd > 4 { posix_spawn_file_actions_addclose(&actions, fd) }
        let argv = launcher + [binary] + flags
        var cArgs = argv.map { strdup($0) } + [nil]
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = env["LANG"] ?? "C.UTF-8"
        var cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, argv[0], &actions, nil, &cArgs, &cEnv)
        Glibc.close(toChild[0])
        Glibc.close(fromChild[1])
        guard rc == 0 else { throw Failure(description: "cannot run \(binary): \(String(cString: strerror(rc)))") }
        pid = child
        toBrowser = toChild[1]
        fromBrowser = fromChild[0]
        _ = try call("Target.setDiscoverTargets", ["discover": true], timeout: 30)
    }

    deinit { close() }

    private var closed = false

    /// Ends the browser and removes its profile.
    public func close() {
        guard !closed else { return }
        closed = true
        _ = try? call("Browser.close", [:], timeout: 3)
        Glibc.close(toBrowser)
        Glibc.close(fromBrowser)
        var status: Int32 = 0
        if !eventually(5, poll: 0.05, { waitpid(pid, &status, WNOHANG) == pid }) {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// What Chromium wrote on stderr (for a failing test's message).
    public var log: String { (try? String(contentsOfFile: profile + "/chromium.log", encoding: .utf8)) ?? "" }

    /// One page (a target attached in flat mode).
    public struct Page {
        public let session: String
        public let target: String
    }

    /// Opens `url` in a new page and waits for its load; `beforeLoad` (JS) runs in it before any of
    /// the page's own scripts (to stand in for the machine: no camera, no microphone).
    public func open(_ url: String, beforeLoad: String? = nil) throws -> Page {
        let created = try call("Target.createTarget", ["url": "about:blank"])
        guard let target = created["targetId"] as? String else { throw Failure(description: "no target: \(created)") }
        let attached = try call("Target.attachToTarget", ["targetId": target, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "not attached: \(attached)") }
        let page = Page(session: session, target: target)
        _ = try call("Page.enable", [:], session: session)
        _ = try call("Runtime.enable", [:], session: session)
        if let beforeLoad { _ = try call("Page.addScriptToEvaluateOnNewDocument", ["source": beforeLoad], session: session) }
        _ = try call("Page.navigate", ["url": url], session: session)
        guard try waitFor(page, "document.readyState === 'complete'", timeout: 20) else { throw Failure(description: "\(url) did not load") }
        return page
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value (JSON-able).
    public func evaluate(_ page: Page, _ expression: String, timeout: TimeInterval = 20) throws -> Any? {
        let reply = try call("Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true, "userGesture": true],
                             session: page.session, timeout: timeout)
        if let exception = reply["exceptionDetails"] as? [String: Any] {
            let text = ((exception["exception"] as? [String: Any])?["description"] as? String) ?? "\(exception)"
            throw Failure(description: "the page threw: \(text)")
        }
        return (reply["result"] as? [String: Any])?["value"]
    }

    /// Polls `condition` (a JS boolean expression) until true or `timeout`.
    public func waitFor(_ page: Page, _ condition: String, timeout: TimeInterval) throws -> Bool {
        eventually(timeout, poll: 0.1) { (try? evaluate(page, "Boolean(\(condition))", timeout: 5)) as? Bool == true }
    }

    /// A PNG of the page as it is drawn.
    public func screenshot(_ page: Page) throws -> Data {
        let r = try call("Page.captureScreenshot", ["format": "png"], session: page.session)
        guard let b64 = r["data"] as? String, let data = Data(base64Encoded: b64) else { throw Failure(description: "no screenshot") }
        return data
    }

    /// Sends one command and waits for its reply (events meanwhile are kept in `events`).
    @discardableResult
    public func call(_ method: String, _ params: [String: Any], session: String? = nil, timeout: TimeInterval = 20) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var bytes = Array(try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(toBrowser, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure(description: "the browser's pipe closed (\(method))") }
            written += n
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            while let end = pending.firstIndex(of: 0) {
                let text = Array(pending[..<end])
                pending.removeSubrange(...end)
                guard let object = (try? JSONSerialization.jsonObject(with: Data(text))) as? [String: Any] else { continue }
                if let replyID = object["id"] as? Int, replyID == id {
                    if let error = object["error"] as? [String: Any] { throw Failure(description: "\(method): \(error)") }
                    return object["result"] as? [String: Any] ?? [:]
                }
                if let m = object["method"] as? String { events.append((m, object["params"] as? [String: Any] ?? [:])) }
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "no reply to \(method) within \(Int(timeout)) s") }
            var p = pollfd(fd: fromBrowser, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(left, 1) * 1000)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { read(fromBrowser, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure(description: "the browser exited (\(method)):\n\(log.suffix(2000))") }
            pending += chunk[0..<n]
        }
    }
}

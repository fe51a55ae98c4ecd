#if canImport(Glibc)
import Glibc
#endif
import CallsCore
import CallsSupport
import Foundation

/// One caption worker process (`whisper-worker.py` or `moonshine-worker.py` under its engine's
/// Python; the protocol is `caption_worker.py`'s): PCM in on its standard input, a JSON line out
/// on its standard output per request. Owns the process and both pipes: `close()` (or deinit)
/// ends it and reaps it.
///
/// Thread rules: one thread at a time (its recogniser's lessee).
final class RecognizerWorker {
    /// A reply to request `id`: the text, or why there is none.
    struct Reply: Equatable {
        var id: Int
        var text: String?
        var error: String?
        var ms: Int
    }

    let pid: pid_t
    /// The engine's name, for messages ("whisper", "moonshine").
    let engine: String
    /// The model the worker loaded (its directory's name).
    private(set) var model = "?"
    private let input: Int32
    private let output: Int32
    private var pending: [UInt8] = []
    private var closed = false
    /// Bytes of reply line kept at most (a line longer than this is the worker out of step).
    static let maxLineBytes = 64 << 10

    /// The path of the worker script `name` (without ".py") in this module's resources; nil when
    /// it, or the protocol module every worker imports, is missing.
    static func script(_ name: String) -> String? {
        guard Bundle.module.path(forResource: "caption_worker", ofType: "py") != nil else { return nil }
        return Bundle.module.path(forResource: name, ofType: "py")
    }

    /// Starts `python script [modelDir]` with `environment` added to callroomd's, and waits (up
    /// to `timeout` s) for its "ready" line.
    init(engine: String, python: String, script: String, modelDir: String?, environment: [String: String] = [:],
         timeout: Double = 60) throws(CaptionError) {
        self.engine = engine
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard pipe(&toChild) == 0 else { throw .recognizer("\(engine): pipe failed (errno \(errno))") }
        guard pipe(&fromChild) == 0 else {
            Glibc.close(toChild[0]); Glibc.close(toChild[1])
            throw .recognizer("\(engine): pipe failed (errno \(errno))")
        }
        // (Not inherited by other children callroomd starts; dup2 gives the worker its own copies.)
        for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = [python, script] + (modelDir.map { [$0] } ?? [])
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        var cArguments = arguments.map { strdup($0) } + [nil]
        var cEnvironment = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let rc = posix_spawn(&child, python, &actions, nil, &cArguments, &cEnvironment)
        Glibc.close(toChild[0])
        Glibc.close(fromChild[1])
        guard rc == 0 else {
            Glibc.close(toChild[1]); Glibc.close(fromChild[0])
            throw .recognizer("\(engine): cannot start \(python) (errno \(rc))")
        }
        pid = child
        input = toChild[1]
        output = fromChild[0]
        // (A worker that died must not kill callroomd when it is written to.)
        signal(SIGPIPE, SIG_IGN)
        var ready: [String: Any]?
        do { ready = try json(try readLine(timeout: timeout)) } catch {
            close()
            throw error
        }
        guard let ready, ready["ready"] as? Bool == true else {
            close()
            let why = (ready?["error"] as? String).map { ": \($0)" } ?? ""
            throw .recognizer("\(engine): the worker could not load its model\(why)")
        }
        model = ready["model"] as? String ?? "?"
    }

    deinit { close() }

    /// Whether the process still runs.
    var isAlive: Bool {
        guard !closed else { return false }
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Which pass a request is: the worker decodes a final one more thoroughly (beam search).
    enum Pass: String {
        /// A partial caption while someone talks: greedy, as fast as it goes.
        case partial
        /// The utterance's final caption.
        case final
    }

    /// Sends request `id`: `samples` of 16 kHz audio.
    func send(id: Int, samples: [Int16], pass: Pass) throws(CaptionError) {
        let header = Array("{\"id\":\(id),\"samples\":\(samples.count),\"pass\":\"\(pass.rawValue)\"}\n".utf8)
        let ok = DescriptorWriter.write(input, header) && samples.withUnsafeBytes { DescriptorWriter.write(input, $0) }
        guard ok else { throw .recognizer("\(engine): the worker stopped reading (it died?)") }
    }

    /// The next reply: waits up to `timeout` seconds (0: only what has arrived); nil when none came.
    func reply(timeout: Double) throws(CaptionError) -> Reply? {
        let line: String
        do { line = try readLine(timeout: timeout) } catch .recognizer(let m) where m == Self.noLine { return nil }
        guard let o = try json(line), let id = o["id"] as? Int else { throw .recognizer("\(engine): a reply out of step") }
        return Reply(id: id, text: o["text"] as? String, error: o["error"] as? String, ms: o["ms"] as? Int ?? 0)
    }

    /// CPU seconds the worker has used (user + system) and its resident memory (KiB).
    var usage: (cpuSeconds: Double, residentKiB: Int) {
        (ProcessUsage.cpuSeconds(pid) ?? 0, ProcessUsage.residentKiB(pid) ?? 0)
    }

    /// Ends the worker (its input closed, then SIGKILL if it lingers) and reaps it.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(input)
        Glibc.close(output)
        var status: Int32 = 0
        for _ in 0..<20 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }

    // MARK: Reading

    private static let noLine = "no reply yet"

    private func readLine(timeout: Double) throws(CaptionError) -> String {
        let deadline = monotonicNanoseconds() + UInt64(max(0, timeout) * 1e9)
        while true {
            if let nl = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeFirst(nl + 1)
                return line
            }
            guard pending.count <= Self.maxLineBytes else { throw .recognizer("\(engine): a reply line too long") }
            let now = monotonicNanoseconds()
            let waitMs = now >= deadline ? 0 : Int32(min(1000, (deadline - now) / 1_000_000 + 1))
            var p = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, waitMs)
            if ready == 0 {
                if monotonicNanoseconds() >= deadline { throw .recognizer(Self.noLine) }
                continue
            }
            if ready < 0 && errno == EINTR { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .recognizer("\(engine): the worker exited") }
            pending += chunk[0..<n]
        }
    }

    private func json(_ line: String) throws(CaptionError) -> [String: Any]? {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            throw .recognizer("\(engine): not a JSON reply")
        }
        return o
    }
}

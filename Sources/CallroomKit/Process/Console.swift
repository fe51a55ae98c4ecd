import CallsCore
import Foundation
import Synchronization

/// Output helpers for the command-line front end: unbuffered writes to stdout and stderr.
/// A closed stdout (`callroom … --headless | head -1`) is not a crash: the line is dropped and
/// `onOutputClosed` runs once on the main queue (a headless session leaves and exits).
///
/// Thread rules: `out` and `err` from any thread; `onOutputClosed` is set and run on main.
package enum Console {
    package static func out(_ line: String) {
        if !DescriptorWriter.write(STDOUT_FILENO, line + "\n") { outputGone() }
    }

    /// One JSON object on a line of stdout, with `ts` (ISO 8601, UTC, milliseconds) added and
    /// keys sorted: the headless clients' own lines beside the listener callbacks'.
    package static func outJSON(_ fields: [String: Any]) {
        var d = fields
        d["ts"] = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        guard let data = try? JSONSerialization.data(withJSONObject: d, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        out(String(decoding: data, as: UTF8.self))
    }

    /// The reader of stdout is gone: `onOutputClosed` runs, once, on main.
    private static func outputGone() {
        guard !outputClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.main.async { MainActor.assumeIsolated { onOutputClosed?() } }
    }

    package static func err(_ line: String) { DescriptorWriter.write(STDERR_FILENO, line + "\n") }

    /// Runs once when a write to stdout first fails (its reader is gone), or when
    /// `watchOutput`'s check finds it gone.
    @MainActor package static var onOutputClosed: (@MainActor () -> Void)? {
        didSet { if onOutputClosed != nil { watchOutput() } }
    }
    private static let outputClosed = Atomic<Bool>(false)
    nonisolated(unsafe) private static var watch: DispatchSourceTimer?

    /// A client that prints nothing for a while (online, no call ringing) would not notice its
    /// reader go until it next writes: once a second `poll(2)` asks stdout (a pipe whose reader
    /// closed reports POLLERR; a terminal that went, POLLHUP).
    @MainActor private static func watchOutput() {
        guard watch == nil, isatty(STDOUT_FILENO) == 0 else { return }
        let t = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        t.schedule(deadline: .now() + 1, repeating: 1)
        t.setEventHandler { if DescriptorWriter.isHungUp(STDOUT_FILENO, events: Int16(POLLOUT)) { outputGone() } }
        t.resume()
        watch = t
    }

    /// Prints `callroom: message` on stderr and exits with `code` (2 for usage errors).
    package static func fail(_ message: String, code: Int32 = 2) -> Never {
        err("callroom: \(message)")
        ProcessExit.now(code)
    }
}

/// Exit codes of `callroom` (documented in `callroom --help`).
package enum ExitCode {
    package static let ok: Int32 = 0
    package static let failure: Int32 = 1
    package static let usage: Int32 = 2
    /// The call ended because the connection was lost (`SessionEnding.exitStatus` has the rest:
    /// 5 removed or revoked, 6 the server shut down).
    package static let connectionLost: Int32 = 3
    /// A ringing call that did not connect (declined, busy, unanswered, cancelled).
    package static let notConnected: Int32 = 4
    /// A scenario's `expect` lines did not all hold (`callroom demo --scenario F`).
    package static let expectationsFailed: Int32 = 7
}

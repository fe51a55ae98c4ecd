import CallsCore
import Foundation
import Synchronization

/// Output helpers for the command-line front end: unbuffered writes to stdout and stderr.
/// A closed stdout (`callroom … --headless | head -1`) is not a crash: the line is dropped and
/// `onOutputClosed` runs once on the main queue (a headless session leaves and exits).
///
/// Thread rules: `out` and `err` from any thread; `onOutputClosed` is set and run on main.
enum Console {
    static func out(_ line: String) {
        guard !DescriptorWriter.write(STDOUT_FILENO, line + "\n") else { return }
        guard !outputClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.main.async { MainActor.assumeIsolated { onOutputClosed?() } }
    }

    static func err(_ line: String) { DescriptorWriter.write(STDERR_FILENO, line + "\n") }

    /// Runs once when a write to stdout first fails (its reader is gone).
    @MainActor static var onOutputClosed: (@MainActor () -> Void)?
    private static let outputClosed = Atomic<Bool>(false)

    /// Prints `callroom: message` on stderr and exits with `code` (2 for usage errors).
    static func fail(_ message: String, code: Int32 = 2) -> Never {
        err("callroom: \(message)")
        ProcessExit.now(code)
    }
}

/// Exit codes of `callroom` (documented in `callroom --help`).
enum ExitCode {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    /// The call ended because the connection was lost (`SessionEnding.exitStatus` has the rest:
    /// 5 removed or revoked, 6 the server shut down).
    static let connectionLost: Int32 = 3
    /// A ringing call that did not connect (declined, busy, unanswered, cancelled).
    static let notConnected: Int32 = 4
    /// A scenario's `expect` lines did not all hold (`callroom demo --scenario F`).
    static let expectationsFailed: Int32 = 7
}

import Foundation
import Synchronization

/// Where the signal handlers write (set once, before they are installed; non-blocking).
private nonisolated(unsafe) var signalPipe: Int32 = -1

/// SIGINT, SIGTERM and SIGHUP for every `callroom` command, on every screen: the first one
/// leaves cleanly (the call, the ring, presence) and the process exits as leaving does (0:
/// "You left"; 4 for a call cancelled while ringing out).
///
/// Why not `DispatchSource.makeSignalSource` with `SIG_IGN`: on Linux libdispatch reads a
/// signalfd and blocks the signal only on the thread that registers the source, and
/// `dispatchMain()` parks the main thread in `sigsuspend` with an empty mask; a process-directed
/// signal goes to a thread that does not block it — the main thread — where `SIG_IGN` discarded
/// it. Once a call connected, Ctrl-C, `kill -TERM` and a dropped SSH connection did nothing and
/// the process lived on as a ghost in the call (issue #35). Here a real handler (installed first
/// thing in `main`, `install()`) writes the signal's number to a pipe, whichever thread it
/// interrupts, and one thread reads the pipe and hands each signal to the main queue. Child
/// processes start with default dispositions (exec resets handlers).
///
/// The current screen sets `onSignal` (leave the call, cancel the ring, go offline) and exits
/// when that is done; whatever happens the process exits with 128 + the signal `grace` seconds
/// later, and at once on a second SIGINT or SIGTERM (a SIGHUP after the first signal is the
/// terminal going away, told again, and waits like the first) — both after `beforeForcedExit` (restore the
/// terminal, stop the demo's server); a main thread stuck for two seconds more is not waited
/// for. With no handler set, a signal exits at once.
///
/// Thread rules: `install` once, on the main thread, first; everything else on the main queue.
@MainActor
package enum TerminationSignals {
    /// Seconds from the first signal to the forced exit.
    package nonisolated static let grace: Double = 3

    /// Leaves whatever the current screen is in; the screen exits when it has.
    package static var onSignal: (@MainActor (Int32) -> Void)? {
        didSet { armed.store(onSignal != nil, ordering: .releasing) }
    }
    /// Whether a handler is set: without one the waiting thread exits itself (a command busy on
    /// the main thread, a benchmark, still ends on Ctrl-C).
    private nonisolated static let armed = Atomic<Bool>(false)
    /// Runs before a forced exit (a second SIGINT/SIGTERM, the grace period over, no handler).
    package static var beforeForcedExit: (@MainActor () -> Void)?
    /// The first signal received (nil: none).
    static private(set) var received: Int32?

    /// Installs the handlers and starts the thread that reads what they write.
    package nonisolated static func install() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)  // a handler never blocks
        signalPipe = fds[1]
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { sig in
                var byte = UInt8(truncatingIfNeeded: sig)
                _ = write(signalPipe, &byte, 1)  // async-signal-safe; a full pipe drops a repeat
            }
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(sig, &action, nil)
        }
        let reader = fds[0]
        let waiter = Thread { waitForSignals(reader) }
        waiter.name = "callroom.signals"
        waiter.start()
    }

    /// The reading thread: each signal to the main queue (or, with no handler, the exit).
    private nonisolated static func waitForSignals(_ fd: Int32) {
        var count = 0
        while true {
            var byte: UInt8 = 0
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return }
            let sig = Int32(byte)
            guard armed.load(ordering: .acquiring) else { ProcessExit.now(128 + sig) }
            count += 1
            DispatchQueue.main.async { MainActor.assumeIsolated { deliver(sig) } }
            // A main thread that is stuck does not hold the process: this thread ends it.
            if count == 1 { DispatchQueue.global().asyncAfter(deadline: .now() + grace + 2) { ProcessExit.now(128 + sig) } }
        }
    }

    private static func deliver(_ sig: Int32) {
        // A terminal that goes away is told twice — the kernel's SIGHUP to the session leader and
        // the call screen's own check of its descriptor (`NcursesTerminal`) — up to half a second
        // apart: the second is the same news, not someone in a hurry, and forcing the exit then
        // cut the leave short (a dropped SSH connection left the other side waiting).
        if received != nil, sig == SIGHUP, onSignal != nil { return }
        guard received == nil, let handler = onSignal else { forcedExit(sig) }
        received = sig
        handler(sig)
        DispatchQueue.main.asyncAfter(deadline: .now() + grace) {
            MainActor.assumeIsolated { () -> Void in forcedExit(sig) }
        }
    }

    private static func forcedExit(_ sig: Int32) -> Never {
        beforeForcedExit?()
        fflush(nil)
        ProcessExit.now(128 + (received ?? sig))
    }
}

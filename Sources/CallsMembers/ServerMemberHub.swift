import CallsCore
import CallsTransport
import Foundation

/// One receive thread for many server members: the recorders' and streamers' sockets in one
/// `epoll` set, each drained (`recvmmsg`) when readable, every member's `tick` every ≈ 20 ms.
/// A thread per member woke 50 times a second each (100 recorders: 5,000 context switches a
/// second, the largest share of recording's CPU in `perf`); this wakes 50 times a second in all.
/// Transcribers keep a thread each: recognition is a third of a core per speaker and must not
/// hold up other rooms.
///
/// Thread rules: `add`/`remove` from any thread (`remove` returns once the hub no longer
/// touches that member); members' `pump`/`tickFromHub` run only on the hub's thread.
package final class ServerMemberHub: Sendable {
    private let poller: ReadinessPoller
    private struct State {
        package var members: [UInt64: ServerMember] = [:]
        package var nextTag: UInt64 = 1
        package var running = false
        package var stopping = false
    }
    private let state = Locked(State())
    /// Held while the hub works on members, so `remove` can wait for it to let go of one.
    private let working = NSLock()
    private let done = DispatchSemaphore(value: 0)

    package init?() {
        guard let p = ReadinessPoller() else { return nil }
        poller = p
    }

    /// Takes `member` in (its socket bound and its consent acknowledged); starts the thread on
    /// the first. Returns the tag to remove it with.
    package func add(_ member: ServerMember, fd: Int32) -> UInt64? {
        let (tag, start) = state.withLock { s -> (UInt64?, Bool) in
            guard !s.stopping else { return (nil, false) }
            let t = s.nextTag
            s.nextTag += 1
            s.members[t] = member
            defer { s.running = true }
            return (t, !s.running)
        }
        guard let tag else { return nil }
        poller.add(fd, tag: tag)
        if start {
            let t = Thread { [self] in
                loop()
                done.signal()
            }
            t.name = "callroom.members.receive"
            t.start()
        }
        return tag
    }

    /// Lets go of a member: when this returns, the hub is not calling it and never will again.
    package func remove(_ tag: UInt64, fd: Int32) {
        working.lock()
        poller.remove(fd)
        state.withLock { _ = $0.members.removeValue(forKey: tag) }
        working.unlock()
    }

    /// Stops the thread (the server stopping, after every member was removed).
    package func stop() {
        let wasRunning = state.withLock { s -> Bool in
            s.stopping = true
            return s.running
        }
        if wasRunning { done.wait() }
    }

    private func loop() {
        var nextTick = monotonicNanoseconds()
        while !state.withLock({ $0.stopping }) {
            poller.wait(timeoutMs: 20) { tag in
                working.lock()
                if let m = state.withLock({ $0.members[tag] }) { m.pump() }
                working.unlock()
            }
            let now = monotonicNanoseconds()
            if now >= nextTick {
                working.lock()
                for m in state.withLock({ Array($0.members.values) }) { m.tickFromHub() }
                working.unlock()
                nextTick = now + 20_000_000
                // Let 20 ms of packets gather before the next drain (most of a wake-up's cost).
                usleep(15_000)
            }
        }
    }
}

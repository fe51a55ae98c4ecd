import CallsCore
import CallsSecurity

/// A sender's next SRTP key and when to switch to it (receivers install a new key at once; a
/// sender waits `MediaEngine.keySwitchDelayNanoseconds` so they hold it first). The audio and
/// the video sender each keep one.
///
/// Thread rules: any thread (one lock); `applyIfDue` from the sending thread, before a packet.
final class PendingSendKey: Sendable {
    private let next = Locked<(key: SRTPKey, at: UInt64)?>(nil)

    /// Switch to `key` from `at` (monotonic ns) on; replaces a switch not yet made.
    func schedule(_ key: SRTPKey, at: UInt64) { next.withLock { $0 = (key, at) } }
    func cancel() { next.withLock { $0 = nil } }

    /// Rekeys `sender` when the switch time has come.
    func applyIfDue(to sender: SRTPSender?, now: UInt64 = monotonicNanoseconds()) {
        let due = next.withLock { p -> SRTPKey? in
            guard let k = p, now >= k.at else { return nil }
            p = nil
            return k.key
        }
        if let due { try? sender?.rekey(due) }
    }
}

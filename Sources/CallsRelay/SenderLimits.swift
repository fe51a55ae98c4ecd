/// What one member may send through the relay, per stream: packets and bytes (UDP payload) a
/// second, each with a burst of one second's worth. The same numbers bind the relay's socket
/// path, the media tunnelled over signalling, and the kernel fast path (`cr_config`).
/// A value; any thread.
public struct SenderLimits: Sendable, Equatable {
    public var audioPacketsPerSecond: UInt64 = 250
    public var audioBytesPerSecond: UInt64 = 80_000
    public var videoPacketsPerSecond: UInt64 = 2_000
    public var videoBytesPerSecond: UInt64 = 1_250_000

    public init() {}

    /// No limit at all (benchmarks of the forwarding cost alone).
    public static let unlimited: SenderLimits = {
        var l = SenderLimits()
        l.audioPacketsPerSecond = 0
        l.audioBytesPerSecond = 0
        l.videoPacketsPerSecond = 0
        l.videoBytesPerSecond = 0
        return l
    }()
}

/// One member's token buckets at the relay (audio and video, packets and bytes), on whatever
/// clock the caller gives. Pure: tested on a virtual clock.
///
/// Thread rules: a value owned by one relay worker (or the tunnel path, under its lock).
package struct SenderBudget {
    /// One token bucket in nanotokens (a token is 10⁹ of them), so refills need no division.
    package struct Bucket {
        package var nanotokens: UInt64
        package let perSecond: UInt64

        package init(perSecond: UInt64) {
            self.perSecond = perSecond
            nanotokens = perSecond &* 1_000_000_000
        }

        /// Refills for `elapsed` nanoseconds (capped at one second's worth) and takes `cost`
        /// tokens if there are that many. A rate of 0 is no limit.
        package mutating func take(_ cost: UInt64, elapsed: UInt64) -> Bool {
            guard perSecond > 0 else { return true }
            let capacity = perSecond &* 1_000_000_000
            nanotokens = min(capacity, nanotokens &+ min(elapsed, 1_000_000_000) &* perSecond)
            let need = cost &* 1_000_000_000
            guard nanotokens >= need else { return false }
            nanotokens -= need
            return true
        }
    }

    /// One stream's two buckets and when it was last heard.
    package struct Stream {
        package var packets: Bucket
        package var bytes: Bucket
        package var last: UInt64

        package mutating func admit(_ size: UInt64, now: UInt64) -> Bool {
            let elapsed = now &- last
            last = now
            var p = packets, b = bytes
            guard p.take(1, elapsed: elapsed), b.take(size, elapsed: elapsed) else {
                // The refill counts; the take does not.
                _ = packets.take(0, elapsed: elapsed)
                _ = bytes.take(0, elapsed: elapsed)
                return false
            }
            packets = p
            bytes = b
            return true
        }
    }

    private var audio: Stream
    private var video: Stream

    package init(_ limits: SenderLimits, now: UInt64) {
        audio = Stream(packets: Bucket(perSecond: limits.audioPacketsPerSecond), bytes: Bucket(perSecond: limits.audioBytesPerSecond), last: now)
        video = Stream(packets: Bucket(perSecond: limits.videoPacketsPerSecond), bytes: Bucket(perSecond: limits.videoBytesPerSecond), last: now)
    }

    /// Whether a packet of `bytes` on `kind` at `now` (nanoseconds, monotonic) is within the
    /// member's limits; a packet over either bucket takes nothing from the other.
    package mutating func admit(_ kind: MediaStreamKind, bytes: Int, now: UInt64) -> Bool {
        let size = UInt64(max(0, bytes))
        switch kind {
        case .audio: return audio.admit(size, now: now)
        case .video: return video.admit(size, now: now)
        }
    }
}

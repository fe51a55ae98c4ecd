/// Whether the client of a bucket download keeps up. While the download's buffer is full — the
/// store has bytes waiting and only the client holds them up — the client must take at least
/// `floor.bytes` in every `floor.seconds`; one that takes less is cut, so a client that reads
/// a byte now and then cannot hold one of the node's few bucket downloads for hours (a media
/// player that stops reading resumes with a `Range` request, as it does after any cut). The
/// window closes, unjudged, when the client empties the buffer: then the store is the slow one.
///
/// No clock of its own: times are milliseconds passed in, so tests run it on a virtual clock.
/// A value; its owner's lock guards it.
struct ReaderPace {
    /// The least a client takes, per window, while the store waits on it.
    struct Floor: Sendable, Equatable {
        var bytes: Int
        var seconds: Int
        /// 2 MiB in 2 minutes (17 KiB/s, 140 kb/s: below any broadband or 3G link). The window
        /// is long because the node sees a client's reads through its socket's buffers: the
        /// kernel holds up to 4 MiB sent and not yet read (`net.ipv4.tcp_wmem`) and lets the
        /// node write again only when half of it is read, so a client reading steadily takes
        /// from the download in lumps up to 2 MiB apart. A client at twice the floor is never
        /// cut; a trickle (a few bytes now and then) is, 2 minutes after the buffer fills.
        static let standard = Floor(bytes: 2 << 20, seconds: 120)
    }
    /// What the buffer's owner does next when the buffer is full.
    enum Verdict: Equatable {
        /// Wait for the client to take bytes, at most until `untilMs` (then ask again).
        case wait(untilMs: Int64)
        /// Cut it: it took `took` bytes in the window just over.
        case tooSlow(took: Int)
    }

    let floor: Floor
    /// The window open now: since when the client holds the store up, and what it took since.
    private(set) var window: (startMs: Int64, took: Int)?

    init(floor: Floor) { self.floor = floor }

    /// The client took `bytes`; `emptied`: none are left for it (the window closes unjudged).
    mutating func took(_ bytes: Int, emptied: Bool) {
        if emptied {
            window = nil
        } else if var w = window {
            w.took += bytes
            window = w
        }
    }

    /// The buffer is full at `nowMs`: opens a window unless one is open, judges one that is over
    /// (a client that kept up opens the next).
    mutating func full(nowMs: Int64) -> Verdict {
        let length = Int64(floor.seconds) * 1000
        guard let w = window else {
            window = (nowMs, 0)
            return .wait(untilMs: nowMs + length)
        }
        guard nowMs - w.startMs >= length else { return .wait(untilMs: w.startMs + length) }
        if w.took < floor.bytes { return .tooSlow(took: w.took) }
        window = (nowMs, 0)
        return .wait(untilMs: nowMs + length)
    }
}

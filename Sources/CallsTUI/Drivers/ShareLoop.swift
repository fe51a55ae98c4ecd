import CallsCore
import Foundation

/// The capture loop of a terminal share: every 100 ms the pane's grid, and a frame of what
/// changed (a full one every 5 s), split to fit a WebSocket message, handed to `send`. `ended`
/// runs (on the loop's queue) when the pane is gone. Used by `callroom share` and the call
/// screen's share action.
///
/// Thread rules: runs on its own serial queue (`callroom.share`: a tmux capture blocks, never on
/// main); `start` once, `cancel` from any thread.
public final class ShareLoop: Sendable {
    static let fullEveryNanoseconds: UInt64 = 5_000_000_000
    static let maxRunsPerMessage = 400
    public let tmux: TmuxPane
    private let queue = DispatchQueue(label: "callroom.share")
    private let send: @Sendable (ScreenShareFrame) -> Void
    private let ended: @Sendable () -> Void
    private let cancelled = Locked(false)
    /// What was sent: used on `queue` only (the lock is never contended; it makes that checked).
    private struct Sent: Sendable {
        var last: TerminalGrid?
        var seq = 0
        var lastFull: UInt64 = 0
    }
    private let sent = Locked(Sent())

    public init(tmux: TmuxPane, send: @escaping @Sendable (ScreenShareFrame) -> Void, ended: @escaping @Sendable () -> Void) {
        self.tmux = tmux
        self.send = send
        self.ended = ended
    }

    public func start() { queue.async { self.tick() } }
    public func cancel() { cancelled.withLock { $0 = true } }

    private func tick() {
        guard !cancelled.withLock({ $0 }) else { return }
        guard let geo = tmux.geometry(), let lines = tmux.capture() else { return ended() }
        let grid = TerminalCapture.grid(lines: lines, columns: geo.columns, rows: geo.rows, cursor: geo.cursor)
        let now = monotonicNanoseconds()
        let parts = sent.withLock { s -> [ScreenShareFrame] in
            let forceFull = now - s.lastFull > Self.fullEveryNanoseconds
            guard forceFull || grid != s.last else { return [] }
            let frame = grid.frame(since: forceFull ? nil : s.last, seq: s.seq + 1)
            if frame.full { s.lastFull = now }
            let parts = frame.split(maxRuns: Self.maxRunsPerMessage)
            s.seq = parts.last?.seq ?? s.seq
            s.last = grid
            return parts
        }
        for part in parts { send(part) }
        queue.asyncAfter(deadline: .now() + 0.1) { self.tick() }
    }
}

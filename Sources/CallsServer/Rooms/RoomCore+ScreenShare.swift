import CallsCore

/// Terminal screen share: a presenter's grid frames go to everyone else in the room, and the
/// frames since the last full one are kept, so a late joiner sees the shared terminal at once.
extension RoomCore {
    /// The most frames kept per presenter between full frames (a sharer sends a full one every
    /// few seconds); past it, late joiners wait for the next full frame.
    static let maxKeptShareFrames = 300
    /// …and the most bytes (counted as `ScreenShareFrame.approximateBytes`) kept per presenter:
    /// 300 frames of 60 KB would be 18 MB a presenter.
    static let maxKeptShareBytes = 1 << 20
    /// The most runs one frame may carry (a 300 × 100 grid of single-cell runs).
    static let maxShareRuns = 30_000

    func screenShare(_ room: Room, from pid: String, _ frame: ScreenShareFrame, connection: ConnectionID) {
        guard room.participants[pid]?.wire.isPresenting == true else {
            return fail(connection, .badMessage, "Start presenting (setPresenting) before sharing a screen.", close: false)
        }
        guard frame.runs.count <= Self.maxShareRuns, frame.styles.count <= Self.maxShareRuns, frame.isWellFormed else {
            return fail(connection, .badMessage, "A screen share frame is at most \(TerminalGrid.maxColumns)×\(TerminalGrid.maxRows) cells, with its runs inside it.", close: false)
        }
        let bytes = frame.approximateBytes
        if frame.full && bytes <= Self.maxKeptShareBytes {
            room.shares[pid] = [frame]
            room.shareBytes[pid] = bytes
        } else if !frame.full, var kept = room.shares[pid], kept.count < Self.maxKeptShareFrames,
                  case let total = (room.shareBytes[pid] ?? 0) + bytes, total <= Self.maxKeptShareBytes {
            kept.append(frame)
            room.shares[pid] = kept
            room.shareBytes[pid] = total
        } else {
            // Over a bound: late joiners wait for the next full frame.
            room.shares[pid] = nil
            room.shareBytes[pid] = nil
        }
        for p in room.admitted where p.wire.pid != pid { if let c = p.connection { send(.screenShare(pid: pid, frame: frame), to: c) } }
    }
}

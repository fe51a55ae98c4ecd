import CallsCore

/// Terminal screen share: a presenter's grid frames go to everyone else in the room, and the
/// frames since the last full one are kept, so a late joiner sees the shared terminal at once.
extension RoomCore {
    /// The most frames kept per presenter between full frames (a sharer sends a full one every
    /// few seconds); past it, late joiners wait for the next full frame.
    static let maxKeptShareFrames = 300
    /// The most runs one frame may carry (a 300 × 100 grid of single-cell runs).
    static let maxShareRuns = 30_000

    func screenShare(_ room: Room, from pid: String, _ frame: ScreenShareFrame, connection: ConnectionID) {
        guard room.participants[pid]?.wire.isPresenting == true else {
            return fail(connection, .badMessage, "Start presenting (setPresenting) before sharing a screen.", close: false)
        }
        guard frame.runs.count <= Self.maxShareRuns, frame.styles.count <= Self.maxShareRuns, frame.isWellFormed else {
            return fail(connection, .badMessage, "A screen share frame is at most \(TerminalGrid.maxColumns)×\(TerminalGrid.maxRows) cells, with its runs inside it.", close: false)
        }
        if frame.full {
            room.shares[pid] = [frame]
        } else if var kept = room.shares[pid], kept.count < Self.maxKeptShareFrames {
            kept.append(frame)
            room.shares[pid] = kept
        } else {
            room.shares[pid] = nil
        }
        for p in room.admitted where p.wire.pid != pid { if let c = p.connection { send(.screenShare(pid: pid, frame: frame), to: c) } }
    }
}

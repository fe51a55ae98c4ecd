import CallsCore

/// Terminal screen share: a presenter sends its terminal as text grid frames over the
/// signalling connection (reliable and ordered, so diffs are safe); viewers keep each
/// presenter's grid.
extension CallsClient {
    /// CallRoom: a presenter's shared terminal as it is now (nil: they share none, or its first
    /// full frame has not arrived). Any thread.
    public func screenShareGrid(participantID pid: String) -> TerminalGrid? { published.withLock { $0.screens[pid] } }

    /// CallRoom: the presenters whose terminals this client has. Any thread.
    public var sharedScreens: [String: TerminalGrid] { published.withLock { $0.screens } }

    /// CallRoom: sends one frame of your shared terminal (`setPresenting(true)` first; the
    /// server refuses frames from anyone not presenting). Any thread; frames keep their order.
    public func sendScreenShare(_ frame: ScreenShareFrame) { request(.screenShare(frame)) }
}

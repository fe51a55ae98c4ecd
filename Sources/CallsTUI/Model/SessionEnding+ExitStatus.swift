import CometChatCallsSDK

extension SessionEnding {
    /// The `callroom` exit status for a call that ended this way (docs/call-screen.md, "Exit
    /// status"): 0 you left or the call ended, 3 connection lost, 5 removed or revoked, 6 the
    /// server shut down. (1 failure, 2 usage, 4 a ringing call that did not connect, and 128 + N
    /// after a signal are the commands'.)
    public var exitStatus: Int32 {
        switch self {
        case .left, .endedBy, .peerLeft, .timedOut: return 0
        case .connectionLost: return 3
        case .removed, .revoked: return 5
        case .serverShutdown: return 6
        }
    }
}

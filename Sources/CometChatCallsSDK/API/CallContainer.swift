/// Where the built-in call surface renders. On Linux this is a terminal region (the
/// `callroom` front end's call screen conforms); pass nil to run headless.
/// Methods are called on the SDK callback queue.
public protocol CallContainer: AnyObject {
    /// The session joined; the container starts rendering `session`.
    func callSessionDidStart(_ session: CallSession, settings: SessionSettingsBuilder.SessionSettings)
    /// The session ended; the container stops rendering.
    func callSessionDidEnd(_ session: CallSession)
}

public extension CallContainer {
    func callSessionDidStart(_ session: CallSession, settings: SessionSettingsBuilder.SessionSettings) {}
    func callSessionDidEnd(_ session: CallSession) {}
}

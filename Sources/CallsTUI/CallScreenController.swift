import CometChatCallsSDK
import Foundation

/// Runs the call screen on the main thread: turns listener events into the view model, polls
/// input and audio levels, and redraws at most 30 times a second, only when something changed.
///
/// Thread rules: main thread only (the SDK callback queue must be main).
@MainActor
public final class CallScreenController {
    public private(set) var model: CallViewModel
    private let driver: any TerminalDriver
    private let session: CallSession
    private var bridge: ListenerBridge?
    private var timer: DispatchSourceTimer?
    private var dirty = true
    private var lastSecond = -1
    /// Called when the user asks to quit and the session is over (or was never joined).
    public var onFinished: ((Int32) -> Void)?
    public private(set) var framesDrawn = 0

    public init(driver: any TerminalDriver, title: String, session: CallSession = .shared) {
        self.driver = driver
        self.session = session
        self.model = CallViewModel(title: title)
    }

    /// Registers listeners and starts the redraw timer.
    public func start(refreshHz: Int = 30) {
        let bridge = ListenerBridge { [weak self] e in MainActor.assumeIsolated { self?.handle(e) } }
        bridge.register(on: session)
        self.bridge = bridge
        let t = DispatchSource.makeTimerSource(queue: .main)
        t.schedule(deadline: .now(), repeating: .milliseconds(1000 / refreshHz))
        t.setEventHandler { [weak self] in MainActor.assumeIsolated { self?.tick() } }
        t.resume()
        timer = t
        draw()
    }

    public func stop() {
        timer?.cancel()
        timer = nil
        driver.shutdown()
    }

    public func apply(settings: SessionSettingsBuilder.SessionSettings) {
        model.apply(settings)
        dirty = true
    }

    public func show(notice: String?) {
        model.notice = notice
        dirty = true
    }

    public func setStatus(_ s: String) {
        model.status = s
        dirty = true
    }

    func handle(_ e: CallEvent) {
        model.apply(e, localPID: session.localParticipantID)
        dirty = true
        switch e {
        case .sessionLeft, .sessionTimedOut: finish(0)
        case .connectionClosed: finish(3)
        default: break
        }
    }

    private func finish(_ code: Int32) {
        draw()
        onFinished?(code)
    }

    /// One UI tick: input, levels, clock, then a redraw if anything changed.
    public func tick() {
        while let input = driver.poll() { handle(input) }
        if model.updateLevels(session.audioLevels()) { dirty = true }
        model.now = Date()
        let second = Int(model.now.timeIntervalSince1970)
        if second != lastSecond { lastSecond = second; dirty = true }
        if dirty { draw() }
    }

    private func draw() {
        let (w, h) = driver.size
        driver.present(CallScreenRenderer.render(model, width: w, height: h, unicode: driver.supportsUnicode))
        framesDrawn += 1
        dirty = false
    }

    public func handle(_ input: TerminalInput) {
        switch input {
        case .char("l"), .char("L"), .char("q"), .char("Q"), .interrupt: quit()
        case .char("w"), .char("W"):
            session.isPictureInPictureLayoutEnabled ? session.disablePictureInPictureLayout() : session.enablePictureInPictureLayout()
        case .char(let c):
            let key = Unicode.Scalar(c.properties.lowercaseMapping.unicodeScalars.first?.value ?? c.value) ?? c
            if let (button, _, _) = model.buttons.first(where: { $0.1 == key }) { session.click(button) }
        case .resize: dirty = true
        case .mouse(let x, let y):
            let (w, h) = driver.size
            let l = CallScreenRenderer.layout(for: model, width: w, height: h)
            if let b = l.buttons.first(where: { $0.rect.contains(x: x, y: y) }) {
                if let button = BuiltInButton(rawValue: b.id) { session.click(button) }
            }
        default: break
        }
    }

    /// Leaves the session (or finishes at once when not in one).
    public func quit() {
        if session.isCallSessionActive() {
            model.status = "leaving…"
            dirty = true
            session.click(.leaveSession)
        } else {
            finish(0)
        }
    }
}

extension CallScreenController: @preconcurrency CallContainer {
    public func callSessionDidStart(_ session: CallSession, settings: SessionSettingsBuilder.SessionSettings) {
        apply(settings: settings)
    }
}

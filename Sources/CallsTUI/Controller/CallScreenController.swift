import CallsVideo
import CometChatCallsSDK
import Foundation

/// Runs the call screen on the main thread: turns listener events into the view model, polls
/// input, audio levels and statistics, and redraws at most 30 times a second, only when
/// something changed. After the session ends it shows the summary until a key (or 10 s).
///
/// Thread rules: main thread only, enforced with `dispatchPrecondition`. The SDK callback queue
/// may be any queue: events hop to main.
@MainActor
public final class CallScreenController {
    public internal(set) var model: CallViewModel
    let driver: any TerminalDriver
    let session: CallSession
    private var bridge: ListenerBridge?
    private var timer: DispatchSourceTimer?
    var dirty = true
    private var lastSecond = -1
    private var ticks = 0
    /// Meters or level histories changed since the last redraw (drawn on the next even tick).
    private var levelsMoved = false
    private var lastBytes: [String: (Int, Date)] = [:]
    private var finishing = false
    /// Called when the call is over and the user has seen the summary, with the exit code.
    public var onFinished: ((Int32) -> Void)?
    /// Called once on the main queue the moment the session is over (left, timed out, or the
    /// connection lost), before the summary shows: what must not wait for the user's key (a
    /// ringing call is ended for the other side here).
    public var onSessionOver: ((Int32) -> Void)?
    /// Called once on the main queue when you leave of your own accord (a key, a click, a
    /// signal; not when `leave(because:)` says the other side ended it), with the leave to run
    /// when it is done: a ringing call is ended for the other side first, so they are told it
    /// ended before they see you go (the vendor's end button: `endCall`, then the session).
    /// Asking to leave again meanwhile leaves at once.
    public var beforeLeaving: ((@escaping @Sendable @MainActor () -> Void) -> Void)?
    /// Where the export key writes the event log (a directory; default: the current one).
    public var exportDirectory: String = FileManager.default.currentDirectoryPath
    /// How long the summary stays when no key is pressed (seconds; 0 skips it).
    public var summarySeconds: Double = 10
    public private(set) var framesDrawn = 0
    /// Video frames taken into the model, and the subscriptions last sent (the visible tiles).
    public private(set) var videoFramesShown = 0
    private var videoSerial: UInt64 = 0
    private var lastVideoCapture: [String: UInt64] = [:]
    private var sentSubscriptions: [String]?
    /// Your terminal share, while it runs (CallScreenController+Share).
    var terminalShare: TerminalShare?
    /// Time spent rendering the last frame (ms): the screen's frame budget.
    public private(set) var lastRenderMs: Double = 0

    public init(driver: any TerminalDriver, title: String, session: CallSession = .shared) {
        self.driver = driver
        self.session = session
        self.model = CallViewModel(title: title)
    }

    /// Registers listeners and starts the redraw timer.
    public func start(refreshHz: Int = 30) {
        dispatchPrecondition(condition: .onQueue(.main))
        let bridge = ListenerBridge { [weak self] e in
            DispatchQueue.main.async { MainActor.assumeIsolated { self?.handle(e) } }
        }
        bridge.register(on: session)
        self.bridge = bridge
        model.pictureMode = driver.pictureMode  // the terminal's; it does not change
        model.graphics = driver.graphics
        model.canShareTerminal = TmuxPane.available
        timer = MainTimer.every(.milliseconds(1000 / refreshHz)) { [weak self] in self?.tick() }
        draw()
    }

    public func stop() {
        dispatchPrecondition(condition: .onQueue(.main))
        stopShare(nil)
        timer?.cancel()
        timer = nil
        driver.shutdown()
    }

    public func apply(settings: SessionSettingsBuilder.SessionSettings) {
        model.apply(settings)
        dirty = true
    }

    /// Adds a standing notice (shown wrapped above the tiles; none replaces another).
    public func show(notice: String?) {
        if let n = notice, !model.notices.contains(n) { model.notices.append(n) }
        dirty = true
    }

    /// Replaces the header's title (always shown, first; `callroom replay` shows its position there).
    public func setTitle(_ t: String) {
        model.title = t
        dirty = true
    }

    public func setStatus(_ s: String) {
        model.status = s
        dirty = true
    }

    /// The summary of the call so far (what leaving prints).
    public var summary: CallSummary { CallSummary(model) }

    func handle(_ e: CallEvent) {
        dispatchPrecondition(condition: .onQueue(.main))
        if case .sessionLeft = e { refreshMedia() }
        model.now = Date()
        model.apply(e, localPID: session.localParticipantID, at: model.now)
        if case .sessionJoined = e {
            model.serverFeatures = session.offeredFeatures
            model.reconnectGraceSeconds = session.reconnectGraceSeconds
        }
        // The chat badge is the SDK's (`setChatButtonUnreadCount`): keep both in step.
        if case .chatMessage = e, model.chatUnread != session.chatButtonUnreadCount { session.setChatButtonUnreadCount(model.chatUnread) }
        dirty = true
        switch e {
        case .sessionLeft, .sessionTimedOut, .connectionClosed:
            // What the app knows (the other person hung up) over what the SDK saw (you left).
            let ending = endingOverride ?? session.sessionEnding ?? (e == .sessionTimedOut ? .timedOut : e == .sessionLeft ? .left : .connectionLost)
            model.ending = ending
            finish(ending.exitStatus)
        default: break
        }
    }

    /// Sees every key and click first; true consumes it (`callroom replay`'s transport keys).
    public var inputInterceptor: ((TerminalInput) -> Bool)?

    /// Shows one recorded event as if it had just arrived (`callroom replay`).
    public func replay(_ e: CallEvent) { handle(e) }

    /// Set by `leave(because:)`: how the app says the call ended.
    private var endingOverride: SessionEnding?

    /// Leaves because of something the app knows and the SDK cannot (the other person in a
    /// one-to-one call hung up: `.endedBy(name)`): the summary and the exit status say so.
    public func leave(because ending: SessionEnding) {
        dispatchPrecondition(condition: .onQueue(.main))
        // Already leaving (you left first; the call's end is the echo of that): you left.
        guard !leaving else { return }
        endingOverride = ending
        quit()
    }

    /// You asked to leave (a key, a click, a signal): whatever ends the call next is that.
    var leaving = false

    /// Shows the summary, then (after a key or `summarySeconds`) reports the exit code.
    func finish(_ code: Int32) {
        guard !finishing else { return }
        finishing = true
        onSessionOver?(code)
        stopShare(nil)
        model.pending = nil
        guard summarySeconds > 0 else { draw(); onFinished?(code); return }
        model.overlay = .summary
        draw()
        exitCode = code
        DispatchQueue.main.asyncAfter(deadline: .now() + summarySeconds) { [weak self] in self?.exitNow() }
    }

    private var exitCode: Int32 = 0
    private var exited = false
    func exitNow() {
        guard !exited else { return }
        exited = true
        onFinished?(exitCode)
    }

    private func refreshMedia() {
        if let r = session.mediaReport { model.media = r }
    }

    /// One UI tick: input, levels, statistics, clock, then a redraw if anything changed.
    public func tick() {
        dispatchPrecondition(condition: .onQueue(.main))
        while let input = driver.poll() {
            if inputInterceptor?(input) == true { dirty = true; continue }
            handle(input)
        }
        ticks += 1
        // Meters and level histories move all the time in a room of talkers: redrawn for them
        // alone at most 15 times a second (every other tick); anything else redraws at once.
        if model.updateLevels(session.audioLevels()) { levelsMoved = true }
        // Video at up to 15 frames a second (every other 30 Hz tick); a frame arriving faster is
        // replaced by the next: the screen never queues pictures.
        if ticks % 2 == 0, refreshVideo() { dirty = true }
        if ticks % 3 == 0 {
            let screens = session.sharedScreens
            if screens != model.screens { model.screens = screens; dirty = true }
        }
        if ticks % 3 == 0 { model.sampleLevelHistory(); levelsMoved = true }
        if ticks % 15 == 0 {
            if model.updateQuality(session.connectionQuality()) { dirty = true }
            let bans = session.roomBans
            if bans != model.bans { model.bans = bans; dirty = true }
            refreshStatistics()
        }
        let unread = session.chatButtonUnreadCount
        if unread != model.chatUnread, model.overlay != .summary { model.chatUnread = unread; dirty = true }
        model.now = Date()
        if model.expireToasts() { dirty = true }
        let second = Int(model.now.timeIntervalSince1970)
        if second != lastSecond { lastSecond = second; dirty = true }
        if levelsMoved && ticks % 2 == 0 { dirty = true }
        if dirty || driver.picturesPending { draw() }
    }

    /// Receive statistics, bitrates and the round trip, twice a second.
    private func refreshStatistics() {
        guard model.overlay != .summary else { return }
        refreshMedia()
        model.roundTripMs = session.serverRoundTripMs
        let stats = session.receiveStatistics()
        let now = Date()
        for (pid, s) in stats {
            if let (bytes, at) = lastBytes[pid], now.timeIntervalSince(at) > 0.2 {
                model.bitrates[pid] = Double(s.bytesReceived - bytes) * 8 / 1000 / now.timeIntervalSince(at)
            }
            lastBytes[pid] = (s.bytesReceived, now)
        }
        model.heardStats.merge(stats) { _, latest in latest }
        if stats != model.receiveStats { model.receiveStats = stats; if model.overlay == .stats { dirty = true } }
    }

    func draw() {
        let (w, h) = driver.size
        let started = DispatchTime.now().uptimeNanoseconds
        let screen = CallScreenRenderer.render(model, width: w, height: h, unicode: driver.supportsUnicode)
        lastRenderMs = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        driver.present(screen)
        framesDrawn += 1
        dirty = false
        levelsMoved = false
        // Subscribe to the video of exactly the tiles on screen (a 25-person room on a small
        // terminal receives only what it shows).
        if model.settings.sessionType == .video, session.isCallSessionActive(), screen.videoTiles != sentSubscriptions {
            sentSubscriptions = screen.videoTiles
            session.setVideoSubscriptions(screen.videoTiles)
        }
    }

    /// Takes each visible participant's newest frame into the model; true when any changed.
    func refreshVideo() -> Bool {
        guard model.settings.sessionType == .video, model.overlay != .summary else { return false }
        let me = session.localParticipantID
        var changed = false
        var seen: Set<String> = []
        for t in model.tiles {
            guard let f = session.videoFrame(participantID: t.pid) else { continue }
            seen.insert(t.pid)
            guard lastVideoCapture[t.pid] != f.captureNanoseconds else { continue }
            lastVideoCapture[t.pid] = f.captureNanoseconds
            videoSerial += 1
            model.video[t.pid] = TileVideo(frame: f, serial: videoSerial, mirrored: t.pid == me)
            videoFramesShown += 1
            changed = true
        }
        for pid in model.video.keys where !seen.contains(pid) {
            model.video[pid] = nil
            lastVideoCapture[pid] = nil
            changed = true
        }
        return changed
    }

    /// The layout of the current screen (for mouse hit tests and page sizes).
    var currentLayout: CallScreenRenderer.Layout {
        let (w, h) = driver.size
        return CallScreenRenderer.layout(for: model, width: w, height: h, unicode: driver.supportsUnicode)
    }

    /// Leaves the session now (Ctrl-C, a confirmed leave, a signal), or finishes when not in one.
    public func quit() {
        dispatchPrecondition(condition: .onQueue(.main))
        model.pending = nil
        if session.isCallSessionActive() {
            model.status = "leaving…"
            leaving = true
            dirty = true
            guard endingOverride == nil, let first = beforeLeaving else { return session.click(.leaveSession) }
            beforeLeaving = nil
            first { [session] in if session.isCallSessionActive() { session.click(.leaveSession) } }
        } else if !finishing {
            finish(0)
        } else {
            exitNow()
        }
    }
}

extension CallScreenController: @preconcurrency CallContainer {
    public func callSessionDidStart(_ session: CallSession, settings: SessionSettingsBuilder.SessionSettings) {
        apply(settings: settings)
    }
}

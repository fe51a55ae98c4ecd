import CallsAudio
import CallsCore
import CallsVideo
import Foundation
import Synchronization

/// The active call: listeners, actions and state. Use `CallSession.shared`.
///
/// Thread rules: every method may be called from any thread. Listener callbacks and
/// `events()` elements are delivered on the SDK callback queue (main unless configured with
/// `CallAppSettingsBuilder.set(callbackQueue:)`). Listeners are held weakly.
public final class CallSession: @unchecked Sendable {
    public static let shared = CallSession()

    private let lock = NSLock()
    private var listeners = ListenerSet()
    private var streams: [UUID: AsyncStream<CallEvent>.Continuation] = [:]
    private var client: CallsClient?
    private weak var container: (any CallContainer)?
    private var surfaceState = SurfaceState()
    let audioModesAnnounced = Atomic<Bool>(false)
    private var deviceWatch: DispatchSourceTimer?
    private var deviceStamp: ALSADeviceList.Stamp?
    /// Objects that live as long as the session (the v4 delegate bridge).
    private var keptAlive: [AnyObject] = []

    func keep(_ object: AnyObject) { lock.withLock { keptAlive.append(object) } }
    func kept<T>(_ type: T.Type) -> T? { lock.withLock { keptAlive.compactMap { $0 as? T }.last } }

    init() {}

    // MARK: Listeners

    public func addSessionStatusListener(_ l: any SessionStatusListener) { lock.withLock { listeners.session.add(l) } }
    public func removeSessionStatusListener(_ l: any SessionStatusListener) { lock.withLock { listeners.session.remove(l) } }
    public func addMediaEventsListener(_ l: any MediaEventsListener) { lock.withLock { listeners.media.add(l) } }
    public func removeMediaEventsListener(_ l: any MediaEventsListener) { lock.withLock { listeners.media.remove(l) } }
    public func addParticipantEventListener(_ l: any ParticipantEventListener) { lock.withLock { listeners.participant.add(l) } }
    public func removeParticipantEventListener(_ l: any ParticipantEventListener) { lock.withLock { listeners.participant.remove(l) } }
    public func addLayoutListener(_ l: any LayoutListener) { lock.withLock { listeners.layout.add(l) } }
    public func removeLayoutListener(_ l: any LayoutListener) { lock.withLock { listeners.layout.remove(l) } }
    public func addButtonClickListener(_ l: any ButtonClickListener) { lock.withLock { listeners.button.add(l) } }
    public func removeButtonClickListener(_ l: any ButtonClickListener) { lock.withLock { listeners.button.remove(l) } }

    /// CallRoom: errors of refused requests, and chat.
    public func addCallRoomListener(_ l: any CallRoomListener) { lock.withLock { listeners.callRoom.add(l) } }
    public func removeCallRoomListener(_ l: any CallRoomListener) { lock.withLock { listeners.callRoom.remove(l) } }

    /// Removes every listener of every kind.
    public func clearAllListeners() { lock.withLock { listeners = ListenerSet() } }

    /// CallRoom: every callback as a typed event, from now until the stream is dropped.
    public func events() -> AsyncStream<CallEvent> {
        let (stream, continuation) = AsyncStream<CallEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        lock.withLock { streams[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.streams.removeValue(forKey: id) } }
        return stream
    }

    /// Delivers one event to listeners and streams. Called on the callback queue.
    func dispatch(_ event: CallEvent) {
        let (set, conts) = lock.withLock { (listeners, Array(streams.values)) }
        event.deliver(to: set)
        for c in conts { c.yield(event) }
        if case .sessionLeft = event { endContainer() }
        if case .connectionClosed = event { endContainer() }
        if case .sessionTimedOut = event { endContainer() }
    }

    private func endContainer() {
        stopWatchingAudioDevices()
        lock.withLock { keptAlive.removeAll() }
        let c = lock.withLock { () -> (any CallContainer)? in let c = container; container = nil; return c }
        c?.callSessionDidEnd(self)
    }

    func attach(client: CallsClient?) { lock.withLock { self.client = client } }

    /// Reads or changes the surface state under the session lock.
    @discardableResult
    func surface<T>(_ body: (inout SurfaceState) -> T) -> T { lock.withLock { body(&surfaceState) } }

    /// Starts announcing audio modes: once now, then whenever the device list changes. Every 3 s
    /// the watcher stats the places a change shows (`ALSADeviceList.changeStamp`) and re-reads
    /// the list only when they moved: reading it parses ALSA's whole configuration.
    func watchAudioDevices() {
        audioModesAnnounced.store(false, ordering: .relaxed)
        lock.withLock { deviceStamp = ALSADeviceList.changeStamp() }
        refreshAudioModes()
        let t = DispatchSource.makeTimerSource(queue: .global())
        t.schedule(deadline: .now() + 3, repeating: 3)
        t.setEventHandler { [weak self] in
            guard let self else { return }
            let stamp = ALSADeviceList.changeStamp()
            guard lock.withLock({ () -> Bool in defer { deviceStamp = stamp }; return deviceStamp != stamp }) else { return }
            refreshAudioModes()
        }
        t.resume()
        lock.withLock { deviceWatch?.cancel(); deviceWatch = t }
    }

    private func stopWatchingAudioDevices() { lock.withLock { deviceWatch?.cancel(); deviceWatch = nil } }
    func attach(container: (any CallContainer)?) { lock.withLock { self.container = container } }
    var currentClient: CallsClient? { lock.withLock { client } }

    // MARK: Actions

    /// True while you are in a session.
    public func isCallSessionActive() -> Bool { currentClient?.isSessionActive ?? false }
    /// CallRoom: how your last session ended — you left, a moderator removed you (and who), the
    /// server shut down, the connection was lost… Set before the callback that ends it fires;
    /// nil before any session ended. Any thread.
    public var sessionEnding: SessionEnding? { currentClient?.sessionEnding }
    /// CallRoom: the server's grace period for a resume after the connection drops (s).
    public var reconnectGraceSeconds: Int { currentClient?.reconnectGraceSeconds ?? 30 }
    /// CallRoom: the session features the server offers (empty until joined). Any thread.
    public var offeredFeatures: Set<SessionFeature> { currentClient?.offeredFeatures ?? [] }

    /// Leaves the session; `onSessionLeft` fires when the server confirms.
    public func leaveSession() {
        guard let c = currentClient else { return }
        Task { await c.leave() }
    }

    /// Mutes your microphone; `onAudioMuted` fires when the server confirms.
    public func muteAudio() { currentClient?.setAudioMuted(true) }

    /// Unmutes your microphone; `onAudioUnMuted` fires when the server confirms.
    public func unmuteAudio() { currentClient?.setAudioMuted(false) }

    // MARK: CallRoom extensions

    /// The session's participants (you included), in join order.
    public var participants: [Participant] { currentClient?.participants ?? [] }
    /// Your participant id.
    public var localParticipantID: String? { currentClient?.localParticipantID }
    /// Whether your microphone is muted (as the server last confirmed).
    public var isAudioMuted: Bool { currentClient?.isAudioMuted ?? false }
    /// Audio level in dBFS per participant id.
    public func audioLevels() -> [String: Float] { currentClient?.audioLevels() ?? [:] }
    /// CallRoom: a participant's latest video frame (yours: what you send); nil without one.
    public func videoFrame(participantID: String) -> VideoFrame? { currentClient?.videoFrame(participantID: participantID) }
    /// CallRoom: shows only these participants' video (the visible tiles); see `CallsClient`.
    public func setVideoSubscriptions(_ pids: [String]) { currentClient?.setVideoSubscriptions(pids) }
    /// CallRoom: every decoded frame with its sender's pid, on the media receive thread.
    public func setVideoFrameHandler(_ handler: (@Sendable (String, VideoFrame) -> Void)?) { currentClient?.setVideoFrameHandler(handler) }
    /// CallRoom: sends one frame of your shared terminal (after `setPresenting(true)`).
    public func sendScreenShare(_ frame: ScreenShareFrame) { currentClient?.sendScreenShare(frame) }
    /// CallRoom: presenters' shared terminals by pid (`callroom share`).
    public var sharedScreens: [String: TerminalGrid] { currentClient?.sharedScreens ?? [:] }
    /// CallRoom diagnostics: video sent and received in this session.
    public var videoReport: VideoReport? { currentClient?.videoReport }
    /// Notices from the audio engine (e.g. falling back to `null` without a sound card).
    public var audioNotices: [String] { currentClient?.audioNotices ?? [] }
}

import CallsCore
import CallsVideo
import Foundation

/// Video: the engine's options from the settings, subscriptions (whose video the relay sends
/// us), keyframe requests both ways, receiver reports, and the frames for the screen.
extension CallsClient {
    /// Without `setVideoSubscriptions`, a client shows (subscribes to) this many others, in join order.
    public static let autoVideoSubscriptions = 9

    /// The media engine's video options for `settings` (nil: a voice session). A `none` source
    /// still receives everyone's video; it only sends none.
    func videoOptions(_ settings: SessionSettingsBuilder.SessionSettings) throws(VideoError) -> VideoEngine.Options? {
        guard settings.sessionType != .voice else { return nil }
        let spec = try VideoSourceSpec(settings.videoSource)
        var v = VideoEngine.Options()
        v.source = spec
        v.name = settings.displayName ?? user?.name ?? "me"
        v.width = settings.videoWidth
        v.height = settings.videoHeight
        v.fps = settings.videoFPS
        v.bitrateKbps = settings.videoBitrateKbps
        v.facing = settings.initialCameraFacing == .REAR ? .rear : .front
        v.paused = settings.startVideoPaused
        v.readStamps = settings.readVideoStamps
        return v
    }

    /// CallRoom: shows only these participants' video (your visible tiles): the server's relay
    /// forwards a sender's video only to those showing it. Until called, you get everyone's, up
    /// to `autoVideoSubscriptions`. Any thread.
    public func setVideoSubscriptions(_ pids: [String]) {
        state.async {
            self.videoSubscriptions = pids
            self.sendVideoSubscriptions()
        }
    }

    /// Sends the subscription set when it changed (state queue): after a join, a roster change,
    /// a resume or rejoin (`force`).
    func sendVideoSubscriptions(force: Bool = false) {
        dispatchPrecondition(condition: .onQueue(state))
        guard phase == .joined, let me else { return }
        let others = rosterOrder.filter { $0 != me.pid && rosterByPID[$0]?.videoSsrc != nil }
        let wanted = videoSubscriptions.map { $0.filter { rosterByPID[$0] != nil && $0 != me.pid } }
            ?? Array(others.prefix(Self.autoVideoSubscriptions))
        guard force || wanted != sentVideoSubscriptions else { return }
        sentVideoSubscriptions = wanted
        socket?.send(text: ClientMessage.subscribeVideo(pids: wanted).json())
    }

    /// Our decoder lost a sender's stream: ask it (through the server) for a keyframe.
    func askForKeyframe(videoSSRC: UInt32) {
        dispatchPrecondition(condition: .onQueue(state))
        guard phase == .joined, let w = rosterByPID.values.first(where: { $0.videoSsrc == videoSSRC }) else { return }
        socket?.send(text: ClientMessage.requestKeyframe(pid: w.pid).json())
    }

    /// CallRoom: the latest picture of a participant (yours: what you send, unmirrored; nil while
    /// paused, before the first frame, or for participants you do not show). Any thread.
    public func videoFrame(participantID pid: String) -> VideoFrame? {
        guard let engine = state.sync(execute: { self.engine }), let video = engine.video else { return nil }
        if pid == localParticipantID { return video.localFrame }
        guard let vs = published.withLock({ p in p.roster.first { $0.pid == pid }?.videoSSRC }) else { return nil }
        return video.frame(of: vs)
    }

    /// CallRoom: called with every decoded frame and its sender's pid, on the media receive
    /// thread (keep it quick): QA dumps (`--video-out`), tests. nil stops it.
    public func setVideoFrameHandler(_ handler: (@Sendable (String, VideoFrame) -> Void)?) {
        guard let video = state.sync(execute: { self.engine?.video }) else { return }
        guard let handler else { return video.onFrame.withLock { $0 = nil } }
        video.onFrame.withLock { $0 = { [weak self] ssrc, frame in
            guard let pid = self?.published.withLock({ p in p.roster.first { $0.videoSSRC == ssrc }?.pid }) else { return }
            handler(pid, frame)
        } }
    }

    /// CallRoom: whether this client sends video (a video session with a source), and from what.
    public var videoSourceName: String? { state.sync { engine?.video?.sourceName } }

    /// CallRoom diagnostics: video sent and received in this session.
    public var videoReport: VideoReport? {
        guard let s = state.sync(execute: { engine?.video?.statistics }) else { return nil }
        let bySSRC = published.withLock { p in Dictionary(p.roster.compactMap { r in r.videoSSRC.map { ($0, r.pid ?? "") } }, uniquingKeysWith: { a, _ in a }) }
        var received: [String: VideoReport.Received] = [:]
        for (ssrc, f) in s.received {
            guard let pid = bySSRC[ssrc] else { continue }
            received[pid] = .init(packets: f.packets, framesDecoded: f.framesDecoded, framesDropped: f.framesDropped,
                                  keyframesRequested: f.keyframesRequested, decodeErrors: f.decodeErrors, stampLatencyMs: f.stampLatencyMs)
        }
        return VideoReport(framesSent: s.framesSent, keyframesSent: s.keyframesSent, packetsSent: s.packetsSent, bytesSent: s.bytesSent,
                           bitrateKbps: s.bitrateKbps, fps: s.fps, received: received)
    }
}

/// CallRoom diagnostics: a session's video (`CallsClient.videoReport`). A value; any thread.
public struct VideoReport: Sendable, Equatable {
    public struct Received: Sendable, Equatable {
        public var packets: Int
        public var framesDecoded: Int
        /// Frames dropped because frames before them were lost (waiting for a keyframe).
        public var framesDropped: Int
        public var keyframesRequested: Int
        public var decodeErrors: Int
        /// Capture to decode of the last frame (ms), read from the test pattern's stamp.
        public var stampLatencyMs: Double?
    }
    public var framesSent: Int
    public var keyframesSent: Int
    public var packetsSent: Int
    public var bytesSent: Int
    /// The sender's current targets (they fall with receivers' loss).
    public var bitrateKbps: Int
    public var fps: Int
    /// By sender pid.
    public var received: [String: Received]
}

import CallsAudio
import CallsCore
import CallsTransport
import CallsVideo
import Foundation
import Synchronization

/// One participant's connection to a CallRoom server: REST login and tokens, the signalling
/// WebSocket, and the media engine. `CallSession.shared` is built on one of these; CallRoom's
/// synthetic participants and load generator run many in one process.
///
/// Thread rules: every method may be called from any thread. Events are delivered, in order,
/// on the `eventQueue` given at creation. State is confined to an internal serial queue.
public final class CallsClient: @unchecked Sendable {
    public let serverURL: URL
    /// How an `https://` server's certificate is checked.
    public let trust: TLSTrust
    public let appID: String
    let rest: RESTClient
    private let eventQueue: DispatchQueue
    private let onEvent: @Sendable (CallEvent) -> Void
    private let mediaProbe: (any MediaProbe)?
    let state = DispatchQueue(label: "callroom.client")

    // Confined to `state`
    /// Where the session is, the heartbeat, resume and rejoin: one value, its transitions
    /// carried out by `run` (CallsClient+Signalling).
    var connection = ClientConnection()
    var phase: ClientConnection.Phase { connection.phase }

    /// Tests of the whole client against a stalled server: how long the server may be silent
    /// before the connection counts as lost (5 s), set before joining.
    func setServerSilence(seconds: Double) {
        state.sync { connection = ClientConnection(serverSilence: UInt64(seconds * 1e9)) }
    }
    var socket: WebSocketClient? { didSet { mediaPath.withLock { $0.socket = socket } } }
    var link: SignalLink?
    var engine: MediaEngine? { didSet { mediaPath.withLock { $0.engine = engine } } }
    /// Media goes over the signalling connection (UDP to the relay is blocked).
    var mediaOverSignalling = false
    var sessionID = ""
    var me: WireParticipant?
    var rosterOrder: [String] = []
    var rosterByPID: [String: WireParticipant] = [:]
    var joinContinuation: CheckedContinuation<Void, any Error>?
    var leaveContinuation: CheckedContinuation<Void, Never>?
    var settings = SessionSettingsBuilder.SessionSettings()
    var pendingNotices: [String] = []
    /// Whose video we show (sent as `subscribeVideo`); nil: everyone's, up to `autoVideoSubscriptions`.
    var videoSubscriptions: [String]?
    var sentVideoSubscriptions: [String]?
    var dominantPID: String?
    var reportTimer: DispatchSourceTimer?
    /// The latest loss report of each receiver of our audio.
    var lossReports: [String: ReceiverLossReport] = [:]
    /// The speaker output, kept open while another audio mode plays (state queue).
    var parkedSpeaker: (any AudioOutput)?
    /// Connection quality per pid at the last report interval (for change events).
    var lastQualities: [String: ConnectionQuality] = [:]

    /// The current socket and engine, for media over signalling: the capture thread sends on
    /// the socket, the WebSocket's thread hands binary frames to the engine (no queue hop).
    let mediaPath = Locked<(socket: WebSocketClient?, engine: MediaEngine?)>((nil, nil))

    /// Shared with other threads.
    let published = Locked<Published>(Published())
    struct Published {
        var user: CallsUser?
        var roster: [Participant] = []
        var localPID: String?
        var active = false
        var muted = false
        var notices: [String] = []
        var chat: [ChatMessage] = []
        /// The server's invite link for the session (its public URL), if it sent one.
        var inviteLink: String?
        /// The guest invite `guestInvite(sessionID:)` minted last (shared again while it lasts).
        var guestInvite: SessionInvite?
        var sessionID: String?
        /// How many times this session came back by rejoining (the server had lost it) rather
        /// than resuming.
        var rejoins = 0
        /// How the last session ended (nil: none has yet).
        var ending: SessionEnding?
        /// The server's grace period for a resume (s).
        var graceSeconds = 30
        /// The audio endpoints actually open (`null` after a fallback), nil before a join.
        var inUse: (input: String, output: String)?
        /// The server is recording the session.
        var serverRecording = false
        /// The server is transcribing it (captions arrive), in this language.
        var transcriptionLanguage: String?
        /// The room's live stream (nil: none).
        var stream: StreamState?
        /// The session features the server offers (from `joined`).
        var features: Set<SessionFeature> = []
        /// Presenters' shared terminals, by pid.
        var screens: [String: TerminalGrid] = [:]
        /// A moderator locked the room.
        var locked = false
        /// Waiting in the lobby for a moderator to let you in.
        var waitingInLobby = false
        /// (Moderators) who waits in the lobby now, in arrival order.
        var lobby: [Participant] = []
        /// (Moderators) who is banned from the room for good.
        var bans: [String] = []
    }

    /// CallRoom (moderators): the uids banned from the room for good.
    public var roomBans: [String] { published.withLock { $0.bans } }

    /// CallRoom: the room is locked (nobody new may join).
    public var isRoomLocked: Bool { published.withLock { $0.locked } }
    /// CallRoom: you are waiting in the room's lobby ("waiting for the host").
    public var isWaitingInLobby: Bool { published.withLock { $0.waitingInLobby } }
    /// CallRoom (moderators): who waits in the lobby now.
    public var lobby: [Participant] { published.withLock { $0.lobby } }

    /// CallRoom: whether the server is recording this session now.
    public var isServerRecording: Bool { published.withLock { $0.serverRecording } }
    /// CallRoom: whether the server is transcribing this session now (captions arrive as
    /// `onCaptionReceived`).
    public var isServerTranscribing: Bool { published.withLock { $0.transcriptionLanguage != nil } }
    /// CallRoom: the session features the server offers (recording; transcription when it has
    /// a caption model; streaming when it has an Icecast server), known once joined.
    public var offeredFeatures: Set<SessionFeature> { published.withLock { $0.features } }
    /// CallRoom: the room's live stream to Icecast: `.live`, `.reconnecting`, or nil (none).
    public var streamState: StreamState? { published.withLock { $0.stream } }

    /// CallRoom: how many times the current session was restored by joining again with a fresh
    /// call token because the server had lost it (a restart), rather than resumed (the flag that
    /// goes with `onConnectionRestored`; `onSessionRejoined` fires too).
    public var sessionRejoinCount: Int { published.withLock { $0.rejoins } }

    /// - Parameters:
    ///   - serverURL: `http://host:port` of a `callroomd`.
    ///   - eventQueue: where `onEvent` runs (serially, in order).
    /// - Parameter mediaProbe: CallRoom diagnostics: timing hooks on the media threads (benchmarks).
    public init(serverURL: URL, appID: String, eventQueue: DispatchQueue = .main, mediaProbe: (any MediaProbe)? = nil,
                trust: TLSTrust = .system, onEvent: @escaping @Sendable (CallEvent) -> Void) {
        self.mediaProbe = mediaProbe
        self.serverURL = serverURL
        self.trust = trust
        self.appID = appID
        self.rest = RESTClient(baseURL: serverURL, appID: appID, trust: trust)
        self.eventQueue = eventQueue
        self.onEvent = onEvent
    }

    deinit { engine?.stop() }

    // MARK: Accessors (any thread)

    /// The logged-in user, if any.
    public var user: CallsUser? { published.withLock { $0.user } }
    /// The session's participants (including you), in join order.
    public var participants: [Participant] { published.withLock { $0.roster } }
    /// Your participant id in the current session.
    public var localParticipantID: String? { published.withLock { $0.localPID } }
    public var isSessionActive: Bool { published.withLock { $0.active } }
    /// CallRoom: how long the server keeps the session for a resume after the connection drops
    /// (its grace period, from `joined`; 30 before that).
    public var reconnectGraceSeconds: Int { published.withLock { $0.graceSeconds } }
    /// CallRoom: how the last session ended (nil before one has).
    public var sessionEnding: SessionEnding? { published.withLock { $0.ending } }
    /// The session's invite link: the server's public URL when it has one, else the address
    /// this client reached it at. nil outside a session.
    public var inviteLink: String? {
        published.withLock { $0.active ? $0.inviteLink : nil }
    }
    /// The session you are in (nil outside one).
    public var currentSessionID: String? { published.withLock { $0.active ? $0.sessionID : nil } }
    public var isAudioMuted: Bool { published.withLock { $0.muted } }
    /// The session's chat so far (newest last, at most 500).
    public var chatMessages: [ChatEntry] { published.withLock { $0.chat } }

    /// Notices from the media engine (e.g. "no playback device; using null").
    public var audioNotices: [String] { published.withLock { $0.notices } }

    /// Audio level in dBFS per participant id (yours: what your microphone hears).
    public func audioLevels() -> [String: Float] {
        guard let engine = state.sync(execute: { self.engine }) else { return [:] }
        let bySSRC = engine.levels()
        return published.withLock { p in
            var out: [String: Float] = [:]
            for part in p.roster { if let s = part.ssrc, let pid = part.pid, let l = bySSRC[s] { out[pid] = l } }
            return out
        }
    }

    /// Media statistics for tests and benchmarks.
    var mediaStatistics: MediaEngine.Statistics? { state.sync { engine?.statistics } }

    /// The UDP port media leaves from, and the SRTP key epochs held for a sender (tests).
    var mediaLocalPort: UInt16? { state.sync { engine?.localAddress.port } }
    func mediaKeyEpochs(of ssrc: UInt32) -> [UInt8] { state.sync { engine?.keyEpochs(of: ssrc) ?? [] } }

    /// CallRoom diagnostics: the loss percentage your encoder's FEC is tuned for now (from the
    /// worst receiver's reports).
    public var fecExpectedLossPercent: Int? { state.sync { engine?.expectedLossPercent } }

    /// CallRoom diagnostics: jitter-buffer and packet counts of the current session.
    public var mediaReport: MediaReport? {
        guard let s = mediaStatistics, let engine = state.sync(execute: { self.engine }) else { return nil }
        let j = s.jitter.values
        var report = MediaReport(framesCaptured: s.framesCaptured, packetsSent: s.packetsSent, packetsReceived: s.packetsReceived,
                           impairedDrops: s.impairedDrops, played: j.reduce(0) { $0 + $1.played },
                           recovered: j.reduce(0) { $0 + $1.recovered }, concealed: j.reduce(0) { $0 + $1.concealed },
                           late: j.reduce(0) { $0 + $1.late }, overflowDropped: j.reduce(0) { $0 + $1.overflowDropped },
                           lost: j.reduce(0) { $0 + $1.lost + $1.repaired },
                           xruns: engine.xruns, deviceFailures: engine.deviceFailureCount,
                           playbackPeriodMs: engine.playbackPeriodMs.load(ordering: .relaxed),
                           playbackPeriodIsAutomatic: engine.playbackPeriodIsAutomatic,
                           repaired: j.reduce(0) { $0 + $1.repaired }, lateRepairs: j.reduce(0) { $0 + $1.lateRepairs },
                           payloadBytesSent: s.payloadBytesSent, redundancyFrames: engine.redundancyFrames)
        report.delayed = j.reduce(0) { $0 + $1.delayed }
        report.bound = s.bound
        report.srtpRejected = s.srtpRejected
        report.relay = s.relay
        report.playoutAdvances = engine.phaseAdvances.load(ordering: .relaxed)
        report.playoutAdvancedMs = engine.phaseAdvanceSamples.load(ordering: .relaxed) / AudioFormat.samples(ms: 1)
        report.encodeCPUNanoseconds = engine.encodeCPUNanoseconds.load(ordering: .relaxed)
        report.decodeCPUNanoseconds = engine.decodeCPUNanoseconds
        return report
    }

    // MARK: REST

    /// Logs in with the app's auth key (creating the user on a dev server). Development only.
    public func login(uid: String, authKey: String, name: String? = nil) async throws(CometChatCallException) -> CallsUser {
        struct Body: Decodable, Sendable { var uid: String; var name: String; var avatar: String?; var authToken: String }
        var body = ["uid": uid, "authKey": authKey]
        if let name { body["name"] = name }
        let b = try await rest.call("POST", "/v3/sdk/login", body: body, as: Body.self)
        let u = CallsUser(uid: b.uid, name: b.name, avatar: b.avatar, authToken: b.authToken)
        published.withLock { $0.user = u }
        return u
    }

    /// Logs in with an auth token issued by your backend (`POST /v3/users/{uid}/auth_tokens`).
    public func login(authToken: String) async throws(CometChatCallException) -> CallsUser {
        struct Body: Decodable, Sendable { var uid: String; var name: String; var avatar: String? }
        let b = try await rest.call("GET", "/v3/me", headers: ["authToken": authToken], as: Body.self)
        let u = CallsUser(uid: b.uid, name: b.name, avatar: b.avatar, authToken: authToken)
        published.withLock { $0.user = u }
        return u
    }

    public func logout() { published.withLock { $0.user = nil } }

    /// A call token for `sessionID`, for the logged-in user.
    public func generateToken(sessionID: String) async throws(CometChatCallException) -> String {
        guard let u = user else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in before generating a token.")
        }
        guard !sessionID.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.sessionIDError, errorDescription: "The session id is empty.")
        }
        struct Body: Decodable, Sendable { var token: String }
        return try await rest.call("POST", "/v3.0/call_tokens", headers: ["authToken": u.authToken],
                                   body: ["sessionId": sessionID], as: Body.self).token
    }

    // MARK: Session

    /// Joins the session the call token is for. Returns once the server has admitted you and
    /// media has started; `sessionJoined` and `participantListChanged` have been emitted.
    /// - Parameter sessionID: when given, the server checks the token is for this session.
    public func join(callToken: String, sessionID: String? = nil, settings: SessionSettingsBuilder.SessionSettings) async throws(CometChatCallException) {
        do {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                state.async { self.startJoin(callToken: callToken, expectedSessionID: sessionID, settings: settings, continuation: c) }
            }
        } catch let e as CometChatCallException {
            throw e
        } catch {
            throw CometChatCallException(errorCode: CometChatCallException.apiError, errorDescription: "\(error)")
        }
    }

    /// Mutes or unmutes your microphone: silenced locally at once, then confirmed by the server
    /// (`audioMuted`/`audioUnMuted` fire on confirmation).
    public func setAudioMuted(_ muted: Bool) {
        state.async {
            guard self.phase == .joined || self.phase == .reconnecting else { return }
            self.engine?.setMuted(muted)
            self.socket?.send(text: ClientMessage.setAudioMuted(muted).json())
        }
    }

    /// Leaves the session; returns when the server has confirmed (or after 2 s).
    public func leave() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            state.async {
                let effects = self.connection.handle(.leave, at: monotonicNanoseconds())
                guard !effects.isEmpty else { return c.resume() }
                self.leaveContinuation = c
                self.run(effects)
            }
        }
    }

    // MARK: State machine (on `state`)

    func emit(_ e: CallEvent) {
        let handler = onEvent
        eventQueue.async { handler(e) }
    }

    private func startJoin(callToken: String, expectedSessionID: String?, settings: SessionSettingsBuilder.SessionSettings,
                           continuation: CheckedContinuation<Void, any Error>) {
        guard phase == .idle || phase == .ended else {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.alreadyInSession,
                                                                        errorDescription: "A session is already active."))
        }
        self.settings = settings
        mediaOverSignalling = false
        // Open audio first: a bad endpoint fails the join before anyone sees us arrive.
        let frameSamples = AudioFormat.samples(ms: settings.audioFrameMs)
        var notices: [String] = []
        var outputFellBack = false
        let engine: MediaEngine
        do {
            let (input, n1) = try AudioEndpoint(spec: settings.audioInput).openInputFallingBack(frameSamples: frameSamples,
                                                                                                  periodMs: settings.audioPeriodMs)
            let output: (any AudioOutput)?
            if settings.audioOutput == "none" {
                output = nil
            } else {
                // Automatic (no period set): the policy's first choice, the smallest (5 ms).
                let period = settings.audioPeriodMs
                    ?? PlaybackPeriodPolicy(frameMs: settings.audioFrameMs, fixedMs: nil, now: 0).periodMs
                let (o, n2) = try AudioEndpoint(spec: settings.audioOutput).openOutputFallingBack(frameSamples: frameSamples,
                                                                                                  periodMs: period)
                output = o
                if let n2 { notices.append(n2); outputFellBack = true }
            }
            if let n1 { notices.append(n1) }
            // What opened, not what was asked for: a device that failed fell back to null.
            let inUse = (input: n1 == nil ? settings.audioInput : "null",
                         output: outputFellBack ? "null" : settings.audioOutput)
            published.withLock { $0.inUse = inUse }
            var o = MediaEngine.Options()
            o.frameMs = settings.audioFrameMs
            o.jitterTargetFrames = settings.jitterTargetFrames
            o.mixLoudest = settings.audioMixLoudest ?? .max
            o.impairment = settings.networkImpairment
            o.processing = settings.captureProcessing
            o.bitrate = settings.audioBitrate ?? settings.audioProfile.defaultBitrate
            o.complexity = settings.audioComplexity
            o.dtx = settings.audioDTX
            o.profile = settings.audioProfile
            o.redundancy = settings.audioRedundancy
            o.playbackPeriodMs = settings.audioPeriodMs
            let inSpec = settings.audioInput, outSpec = settings.audioOutput, inputPeriod = settings.audioPeriodMs
            if case .alsa = try AudioEndpoint(spec: inSpec) {
                o.reopenInput = { try AudioEndpoint(spec: inSpec).makeInput(frameSamples: frameSamples, periodMs: inputPeriod) }
            }
            if outSpec != "none", case .alsa = try AudioEndpoint(spec: outSpec) {
                o.reopenOutput = { ms in try AudioEndpoint(spec: outSpec).makeOutput(frameSamples: frameSamples, periodMs: ms) }
            }
            o.onNotice = { [weak self] notice in
                self?.published.withLock { $0.notices.append(notice) }
                self?.emit(.audioNotice(notice))
            }
            o.onUDPBlocked = { [weak self] in
                guard let self else { return }
                self.state.async { self.udpBlocked() }
            }
            o.video = try videoOptions(settings)
            o.onKeyframeNeeded = { [weak self] ssrc in
                guard let self else { return }
                self.state.async { self.askForKeyframe(videoSSRC: ssrc) }
            }
            engine = try MediaEngine(input: input, output: output, options: o, probe: mediaProbe)
        } catch let e as AudioError {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.audioError, errorDescription: e.description))
        } catch MediaEngineError.video(let e) {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.videoError, errorDescription: e.description))
        } catch let e as VideoError {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.videoError, errorDescription: e.description))
        } catch {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.audioError, errorDescription: "\(error)"))
        }
        let wsURL = serverURL.appendingPathComponent("v1/signal")
        let link = SignalLink(client: self)
        let socket = WebSocketClient(url: wsURL, trust: trust, delegate: link)
        do { try socket.connect() } catch {
            return continuation.resume(throwing: CometChatCallException(errorCode: CometChatCallException.networkError,
                                                                        errorDescription: "cannot connect to \(wsURL): \(error)"))
        }
        self.engine = engine
        self.link = link
        self.socket = socket
        self.joinContinuation = continuation
        pendingNotices = notices
        feed(.joinSent)
        engine.setMuted(settings.startAudioMuted)
        socket.send(text: ClientMessage.join(.init(callToken: callToken, sessionId: expectedSessionID, displayName: settings.displayName,
                                                   audioMuted: settings.startAudioMuted, videoPaused: settings.startVideoPaused,
                                                   sessionType: settings.sessionType == .voice ? .voice : .video,
                                                   idleTimeoutSeconds: max(0, settings.idleTimeoutPeriod), passcode: settings.passcode)).json())
    }
}

/// Bridges WebSocket delegate calls (service thread) into the client's state queue, so the
/// client type need not expose the delegate conformance.
final class SignalLink: WebSocketClientDelegate, @unchecked Sendable {
    weak var client: CallsClient?
    init(client: CallsClient) { self.client = client }
    func webSocketDidOpen(_ c: WebSocketClient) {}
    func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        if binary { client?.receivedMedia(message, from: self) } else { client?.received(message, from: self) }
    }
    func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) { client?.closed(error, from: self) }
}

/// CallRoom diagnostics: what the media engine did in this session (summed over senders).
public struct MediaReport: Sendable, Equatable {
    public var framesCaptured: Int
    public var packetsSent: Int
    public var packetsReceived: Int
    /// Packets the simulated impairment dropped.
    public var impairedDrops: Int
    /// Frames played from packets, recovered from in-band FEC, concealed (PLC), arriving too late.
    /// Concealed frames after a sender's last packet count once a packet says why it stopped: a
    /// sender that muted (or left) lost nothing and is not counted (`JitterBuffer.Statistics.stopped`).
    public var played: Int
    public var recovered: Int
    public var concealed: Int
    public var late: Int
    public var overflowDropped: Int
    /// Packets lost on the network (gaps followed by later packets, repaired or not), all senders.
    public var lost: Int = 0
    /// Of `concealed` and `late`: those for a packet held up on its way (its transit more than
    /// 4 ms longer than its sender's shortest of late: a stalled sender, relay or path). The
    /// rest missed their frame though they came as early as ever: playout cut it too fine.
    public var delayed: Int = 0

    public init(framesCaptured: Int = 0, packetsSent: Int = 0, packetsReceived: Int = 0, impairedDrops: Int = 0, played: Int = 0,
                recovered: Int = 0, concealed: Int = 0, late: Int = 0, overflowDropped: Int = 0, lost: Int = 0, xruns: Int = 0,
                deviceFailures: Int = 0, playbackPeriodMs: Int = 0, playbackPeriodIsAutomatic: Bool = true,
                repaired: Int = 0, lateRepairs: Int = 0, payloadBytesSent: Int = 0, redundancyFrames: Int = 0) {
        self.playbackPeriodMs = playbackPeriodMs; self.playbackPeriodIsAutomatic = playbackPeriodIsAutomatic
        self.repaired = repaired; self.lateRepairs = lateRepairs; self.payloadBytesSent = payloadBytesSent; self.redundancyFrames = redundancyFrames
        self.framesCaptured = framesCaptured; self.packetsSent = packetsSent; self.packetsReceived = packetsReceived
        self.impairedDrops = impairedDrops; self.played = played; self.recovered = recovered; self.concealed = concealed
        self.late = late; self.overflowDropped = overflowDropped; self.lost = lost; self.xruns = xruns; self.deviceFailures = deviceFailures
    }
    /// ALSA over- and under-runs recovered (current devices).
    public var xruns: Int
    /// Audio devices lost during the session.
    public var deviceFailures: Int
    /// The playback device period in use (ms; 0 before playback starts), and whether CallRoom
    /// chose it (the smallest the device keeps up with) or `setAudioPeriodMs` fixed it.
    public var playbackPeriodMs: Int
    public var playbackPeriodIsAutomatic: Bool
    /// Frames played from a redundant copy in a later packet (their own was lost), and copies
    /// that came after their frame had been concealed (RFC 2198 redundant audio).
    public var repaired: Int
    public var lateRepairs: Int
    /// Audio payload bytes sent (Opus and any redundant copies, before SRTP and headers).
    public var payloadBytesSent: Int
    /// Previous frames each packet we send repeats now (0: plain Opus with in-band FEC), chosen
    /// from the receivers' loss reports.
    public var redundancyFrames: Int
    /// The relay acknowledged our current media binding (media can reach us), and packets
    /// that failed SRTP (from a sender whose key we lack, replayed or tampered with).
    public var bound: Bool = false
    public var srtpRejected: Int = 0
    /// The relay our media goes to (`host:port`: the room's node's).
    public var relay: String = ""
    /// Times playout moved its frame boundary earlier to meet packets as they arrive (a quiet
    /// frame played short), and by how much in all (ms).
    public var playoutAdvances: Int = 0
    public var playoutAdvancedMs: Int = 0
    /// CPU time spent in Opus so far, encoding what we send and decoding what we hear
    /// (nanoseconds of thread CPU time, measured around each call into libopus).
    public var encodeCPUNanoseconds: UInt64 = 0
    public var decodeCPUNanoseconds: UInt64 = 0
}

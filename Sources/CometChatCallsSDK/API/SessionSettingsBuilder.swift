import CallsAudio
import CallsCore

/// Builds the settings of one session: `CometChatCalls.sessionSettingsBuilder.setSessionType(.voice).build()`.
///
/// Every setter returns the builder, so calls chain; `build()` returns an immutable
/// `SessionSettingsBuilder.SessionSettings`. Defaults are the documented ones (docs/sdk.md).
/// Thread rules: a builder is used by one thread; the built settings are a Sendable value.
public final class SessionSettingsBuilder {
    /// The settings of one session. A value; any thread.
    public struct SessionSettings: Sendable, Equatable {
        /// Title shown in the header.
        public var title: String? = nil
        /// Your name in this session (overrides the user's name).
        public var displayName: String? = nil
        /// Voice-only or video.
        public var sessionType: SessionType = .video
        /// Initial layout.
        public var layout: LayoutType = .tile
        /// Seconds alone before the session ends; 0 disables.
        public var idleTimeoutPeriod: Int = 300
        /// CallRoom: the room's passcode, when the operator set one.
        public var passcode: String? = nil
        /// Join with the microphone muted.
        public var startAudioMuted: Bool = false
        /// Join with video paused.
        public var startVideoPaused: Bool = false
        /// Initial audio route.
        public var audioMode: AudioMode = .speaker
        /// Initial camera.
        public var initialCameraFacing: CameraFacing = .FRONT
        /// Start recording on join.
        public var autoStartRecording: Bool = false
        /// Start transcription on join.
        public var autoStartTranscription: Bool = false
        /// Caption language (BCP 47).
        public var captionLanguage: String = "en-US"
        /// CallRoom: the Icecast source URL `startStreaming` sends the room to (nil: the server's
        /// configured one; servers accept a session's own only with `streamingAllowSessionURLs`).
        public var streamingURL: String?
        /// On Linux: start in the compact picture-in-picture layout.
        public var enableIOSPictureInPicture: Bool = false
        public var hideControlPanel: Bool = false
        public var hideHeaderPanel: Bool = false
        public var hideSessionTimer: Bool = false
        public var hideLeaveSessionButton: Bool = false
        public var hideToggleAudioButton: Bool = false
        public var hideToggleVideoButton: Bool = false
        public var hideSwitchCameraButton: Bool = false
        public var hideRecordingButton: Bool = true
        public var hideRecordingStatusIndicator: Bool = false
        public var hideTranscriptionButton: Bool = true
        public var hideClosedCaptionButton: Bool = true
        public var hideAudioModeButton: Bool = false
        public var hideRaiseHandButton: Bool = false
        public var hideShareInviteButton: Bool = true
        public var hideParticipantListButton: Bool = false
        public var hideChangeLayoutButton: Bool = false
        public var hideChatButton: Bool = true
        public var hideStreamingButton: Bool = false
        public var hideStreamingStatusIndicator: Bool = false
        /// CallRoom: the call screen's terminal-share button (`d`).
        public var hideScreenShareButton: Bool = false
        /// CallRoom: the audio input endpoint (`alsa:NAME`, `file:PATH`, `tone:HZ`, `null`).
        public var audioInput: String = "alsa:default"
        /// CallRoom: the audio output endpoint (`alsa:NAME`, `file:PATH.wav`, `null`).
        public var audioOutput: String = "alsa:default"
        /// CallRoom: the audio frame length in milliseconds (10 or 20).
        public var audioFrameMs: Int = 20
        /// CallRoom: simulated loss and jitter on the media this client receives (QA, tests).
        public var networkImpairment: NetworkImpairment?
        /// CallRoom: the least the jitter buffer holds before playout starts (frames). 1, the
        /// default: the depth follows the jitter it measures; more is a floor.
        public var jitterTargetFrames: Int = 1
        /// CallRoom: with more people talking at once than this, only the loudest this many are
        /// decoded and mixed (`ReceiveMixer.loudest`); nil: everyone, always.
        public var audioMixLoudest: Int? = 4
        /// CallRoom: noise suppression, automatic gain, echo cancellation on the microphone.
        public var captureProcessing: CaptureProcessing = .off
        /// CallRoom: Opus bitrate (b/s; nil: the profile's, `OpusEncoder.Profile.defaultBitrate`),
        /// complexity (0…10) and discontinuous transmission.
        public var audioBitrate: Int?
        public var audioComplexity: Int = 9
        public var audioDTX: Bool = false
        /// CallRoom: repeat previous frames in each packet when receivers report loss (RFC 2198).
        public var audioRedundancy: Bool = true
        /// CallRoom: `.voice` (speech), `.music`, or `.lowDelay` (CELT only, 2.5 ms look-ahead, no FEC).
        public var audioProfile: OpusEncoder.Profile = .voice
        /// CallRoom: ALSA device period in ms (2, 5, 10 or 20), fixed; nil means automatic.
        public var audioPeriodMs: Int?
        /// CallRoom: the video source of a `.video` session: `auto` (the camera, else the test
        /// pattern), `v4l2:/dev/videoN`, `pattern`, `avatar`, `file:PATH.y4m`, `none`.
        public var videoSource: String = "auto"
        /// CallRoom: the size, frame rate and top bitrate (kb/s) of the video you send.
        public var videoWidth: Int = 320
        public var videoHeight: Int = 180
        public var videoFPS: Int = 15
        public var videoBitrateKbps: Int = 250
        /// CallRoom: read the capture time stamped into test-pattern frames as they decode
        /// (glass-to-glass latency in `videoStatistics`; QA and benchmarks).
        public var readVideoStamps = false

        public init() {}
    }

    private var settings = SessionSettings()

    public init() {}

    /// Title shown in the header. Default: `nil`.
    @discardableResult public func setTitle(_ value: String) -> SessionSettingsBuilder { settings.title = value; return self }
    /// Your name in this session (overrides the user's name). Default: `nil`.
    @discardableResult public func setDisplayName(_ value: String) -> SessionSettingsBuilder { settings.displayName = value; return self }
    /// Voice-only or video. Default: `.video`.
    @discardableResult public func setSessionType(_ value: SessionType) -> SessionSettingsBuilder { settings.sessionType = value; return self }
    /// Initial layout. Default: `.tile`.
    @discardableResult public func setLayout(_ value: LayoutType) -> SessionSettingsBuilder { settings.layout = value; return self }
    /// Seconds alone before the session ends; 0 disables. Default: `300`.
    @discardableResult public func setIdleTimeoutPeriod(_ value: Int) -> SessionSettingsBuilder { settings.idleTimeoutPeriod = value; return self }
    /// CallRoom: the room's passcode (`PUT /v3/rooms/{sessionId}`). Default: none.
    @discardableResult public func setPasscode(_ value: String?) -> SessionSettingsBuilder { settings.passcode = value; return self }
    /// Join with the microphone muted. Default: `false`.
    @discardableResult public func startAudioMuted(_ value: Bool) -> SessionSettingsBuilder { settings.startAudioMuted = value; return self }
    /// Join with video paused. Default: `false`.
    @discardableResult public func startVideoPaused(_ value: Bool) -> SessionSettingsBuilder { settings.startVideoPaused = value; return self }
    /// Initial audio route. Default: `.speaker`.
    @discardableResult public func setAudioMode(_ value: AudioMode) -> SessionSettingsBuilder { settings.audioMode = value; return self }
    /// Initial camera. Default: `.FRONT`.
    @discardableResult public func setInitialCameraFacing(_ value: CameraFacing) -> SessionSettingsBuilder { settings.initialCameraFacing = value; return self }
    /// Start recording on join. Default: `false`.
    @discardableResult public func enableAutoStartRecording(_ value: Bool) -> SessionSettingsBuilder { settings.autoStartRecording = value; return self }
    /// Start transcription on join. Default: `false`.
    @discardableResult public func enableAutoStartTranscription(_ value: Bool) -> SessionSettingsBuilder { settings.autoStartTranscription = value; return self }
    /// CallRoom: where `startStreaming` sends the room's live mix,
    /// `http://source:PASSWORD@HOST:PORT/MOUNT` (sent over the signalling connection: use TLS).
    /// Default: nil (the server's own `streamingURL`).
    @discardableResult public func setStreamingURL(_ value: String?) -> SessionSettingsBuilder { settings.streamingURL = value; return self }
    /// Caption language (BCP 47). Default: `"en-US"`.
    @discardableResult public func setCaptionLanguage(_ value: String) -> SessionSettingsBuilder { settings.captionLanguage = value; return self }
    /// On Linux: start in the compact picture-in-picture layout. Default: `false`.
    @discardableResult public func enableIOSPictureInPicture(_ value: Bool) -> SessionSettingsBuilder { settings.enableIOSPictureInPicture = value; return self }
    /// Default: `false`.
    @discardableResult public func hideControlPanel(_ value: Bool) -> SessionSettingsBuilder { settings.hideControlPanel = value; return self }
    /// Default: `false`.
    @discardableResult public func hideHeaderPanel(_ value: Bool) -> SessionSettingsBuilder { settings.hideHeaderPanel = value; return self }
    /// Default: `false`.
    @discardableResult public func hideSessionTimer(_ value: Bool) -> SessionSettingsBuilder { settings.hideSessionTimer = value; return self }
    /// Default: `false`.
    @discardableResult public func hideLeaveSessionButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideLeaveSessionButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideToggleAudioButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideToggleAudioButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideToggleVideoButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideToggleVideoButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideSwitchCameraButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideSwitchCameraButton = value; return self }
    /// Default: `true`.
    @discardableResult public func hideRecordingButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideRecordingButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideRecordingStatusIndicator(_ value: Bool) -> SessionSettingsBuilder { settings.hideRecordingStatusIndicator = value; return self }
    /// Default: `true`.
    @discardableResult public func hideTranscriptionButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideTranscriptionButton = value; return self }
    /// Default: `true`.
    @discardableResult public func hideClosedCaptionButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideClosedCaptionButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideAudioModeButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideAudioModeButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideRaiseHandButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideRaiseHandButton = value; return self }
    /// Default: `true`.
    @discardableResult public func hideShareInviteButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideShareInviteButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideParticipantListButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideParticipantListButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideChangeLayoutButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideChangeLayoutButton = value; return self }
    /// Default: `true`.
    @discardableResult public func hideChatButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideChatButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideStreamingButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideStreamingButton = value; return self }
    @discardableResult public func hideScreenShareButton(_ value: Bool) -> SessionSettingsBuilder { settings.hideScreenShareButton = value; return self }
    /// Default: `false`.
    @discardableResult public func hideStreamingStatusIndicator(_ value: Bool) -> SessionSettingsBuilder { settings.hideStreamingStatusIndicator = value; return self }
    /// CallRoom: the audio input endpoint (`alsa:NAME`, `file:PATH`, `tone:HZ`, `null`). Default `alsa:default`.
    @discardableResult public func setAudioInput(_ spec: String) -> SessionSettingsBuilder { settings.audioInput = spec; return self }
    /// CallRoom: the audio output endpoint (`alsa:NAME`, `file:PATH.wav`, `null`). Default `alsa:default`.
    @discardableResult public func setAudioOutput(_ spec: String) -> SessionSettingsBuilder { settings.audioOutput = spec; return self }
    /// CallRoom: the audio frame length, 10 or 20 ms. Default 20.
    @discardableResult public func setAudioFrameMs(_ ms: Int) -> SessionSettingsBuilder { settings.audioFrameMs = ms; return self }

    /// CallRoom: loss and delay variation applied to received media before the jitter buffer.
    @discardableResult public func setNetworkImpairment(_ i: NetworkImpairment?) -> SessionSettingsBuilder { settings.networkImpairment = i; return self }
    /// CallRoom: microphone processing (SpeexDSP). Default off.
    @discardableResult public func setCaptureProcessing(_ p: CaptureProcessing) -> SessionSettingsBuilder { settings.captureProcessing = p; return self }
    /// CallRoom: Opus bitrate in bits per second (6,000…510,000). Default: the profile's —
    /// 48,000 for `.voice`, 64,000 for `.music` and `.lowDelay`.
    @discardableResult public func setAudioBitrate(_ b: Int) -> SessionSettingsBuilder { settings.audioBitrate = min(510_000, max(6_000, b)); return self }
    /// CallRoom: Opus complexity 0…10. Default 9.
    @discardableResult public func setAudioComplexity(_ c: Int) -> SessionSettingsBuilder { settings.audioComplexity = min(10, max(0, c)); return self }
    /// CallRoom: Opus discontinuous transmission (fewer packets in silence). Default off.
    @discardableResult public func enableAudioDTX(_ on: Bool) -> SessionSettingsBuilder { settings.audioDTX = on; return self }
    /// CallRoom: redundant audio (RFC 2198): when the receivers report loss and all of them
    /// decode it, each packet repeats the previous 1–6 frames (`RedundancyPolicy`: 1 from 1 %
    /// loss, 2 from 8 %, 4 from 15 %, or the longest run lost in a row when two longer; one
    /// before the first report) in place of in-band FEC; a lost frame is then played at full
    /// quality from a later packet. Costs up to about 3.5× the audio bitrate under heavy loss
    /// (the bitrate drops as copies are added), nothing on a clean network. Default on; off:
    /// plain Opus with in-band FEC only.
    @discardableResult public func enableAudioRedundancy(_ on: Bool) -> SessionSettingsBuilder { settings.audioRedundancy = on; return self }
    /// CallRoom: tune Opus for speech (`.voice`, default) or music.
    @discardableResult public func setAudioProfile(_ p: OpusEncoder.Profile) -> SessionSettingsBuilder { settings.audioProfile = p; return self }
    /// CallRoom: the playback device period, 2, 5, 10 or 20 ms, fixed. Default (nil): automatic —
    /// 5 ms with 20 ms frames, 2 ms with 10 ms frames, moved to the next larger (up to a frame)
    /// when the device under-runs three times within 10 s (`MediaReport.playbackPeriodMs` says
    /// which). Capture reads a frame at a time either way.
    @discardableResult public func setAudioPeriodMs(_ ms: Int?) -> SessionSettingsBuilder {
        settings.audioPeriodMs = ms.map { PlaybackPeriodPolicy.candidatesMs.contains($0) ? $0 : 10 }
        return self
    }
    /// CallRoom: the jitter buffer's least start depth in frames (at least 1). Default 1: the
    /// depth follows the measured jitter (`JitterBuffer`); a larger value is a floor under it.
    @discardableResult public func setJitterTargetFrames(_ n: Int) -> SessionSettingsBuilder { settings.jitterTargetFrames = max(1, n); return self }
    /// CallRoom: how many simultaneous talkers are decoded and mixed — the loudest, by the level
    /// each packet carries (default 4; the others cost no decode, their meters still move).
    /// nil: everyone, whatever the room (a choir, a jam).
    @discardableResult public func setAudioMixLoudest(_ n: Int?) -> SessionSettingsBuilder { settings.audioMixLoudest = n.map { max(1, $0) }; return self }

    /// CallRoom: the video source (`auto`, `v4l2:/dev/videoN`, `pattern`, `avatar`, `file:PATH.y4m`,
    /// `none`). Default `auto`: the machine's camera, else the test pattern.
    @discardableResult public func setVideoSource(_ spec: String) -> SessionSettingsBuilder { settings.videoSource = spec; return self }
    /// CallRoom: the video you send: size (even, 64x36…1280x720), frames a second (1…30) and top
    /// bitrate in kb/s (50…2,000). Default 320x180, 15 fps, 250 kb/s.
    @discardableResult public func setVideoFormat(width: Int, height: Int, fps: Int = 15, bitrateKbps: Int = 250) -> SessionSettingsBuilder {
        settings.videoWidth = min(1280, max(64, width)) & ~1
        settings.videoHeight = min(720, max(36, height)) & ~1
        settings.videoFPS = min(30, max(1, fps))
        settings.videoBitrateKbps = min(2000, max(50, bitrateKbps))
        return self
    }
    /// CallRoom: read test-pattern time stamps from received frames (latency figures).
    @discardableResult public func enableVideoStamps(_ on: Bool) -> SessionSettingsBuilder { settings.readVideoStamps = on; return self }

    @available(*, deprecated, renamed: "setSessionType(_:)")
    @discardableResult public func setType(_ value: SessionType) -> SessionSettingsBuilder { setSessionType(value) }

    public func build() -> SessionSettings { settings }
}

import Foundation

// The v4 standalone API (seed document 002), mapped onto the v5 engine. Everything here is
// deprecated: it exists so v4 code compiles and works while it migrates.

/// v4 layout modes.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public enum DisplayMode: String, Sendable { case `default`, single, spotlight }

/// v4 avatar shapes (stored; the terminal UI shows initials).
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public enum AvatarMode: String, Sendable { case circle, square, fullscreen }

extension AudioMode {
    /// v4: `AudioMode(mode: "SPEAKER")`. Unknown names mean `.speaker`.
    public init(mode: String) { self = AudioMode(rawValue: mode.lowercased()) ?? .speaker }
}

/// v4: the result of `generateToken(authToken:sessionID:…)`.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public final class GenerateToken: Sendable {
    public let token: String?
    public let sessionId: String
    init(token: String?, sessionId: String) { self.token = token; self.sessionId = sessionId }
}

/// v4: a participant in `CallsEventsDelegate` callbacks.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public struct RTCUser: Sendable, Equatable {
    public var uid: String
    public var name: String
    public var avatar: String?
    public var pid: String?
    public var isAudioMuted: Bool
}

/// v4: who was muted or unmuted.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public struct RTCMutedUser: Sendable, Equatable {
    public var muted: RTCUser
    public var isMuted: Bool
}

/// v4: recording started or stopped, and by whom.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public struct RTCRecordingInfo: Sendable, Equatable {
    public var recordingStarted: Bool
    public var user: RTCUser
}

/// v4: a switch to video.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public struct CallSwitchRequestInfo: Sendable, Equatable {
    public var sessionId: String
    public var requestedBy: RTCUser?
}

/// v4 call events. Every method has a default empty implementation. Delivered on the SDK
/// callback queue.
@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public protocol CallsEventsDelegate: AnyObject {
    func onCallEnded()
    func onSessionTimeout()
    func onCallEndButtonPressed()
    func onUserJoined(rtcUser: RTCUser)
    func onUserLeft(rtcUser: RTCUser)
    func onUserListChanged(rtcUsers: [RTCUser])
    func onAudioModeChanged(mode: [AudioMode])
    func onCallSwitchedToVideo(callSwitchedInfo: CallSwitchRequestInfo)
    func onUserMuted(rtcMutedUser: RTCMutedUser)
    func onRecordingToggled(recordingInfo: RTCRecordingInfo)
}

@available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
public extension CallsEventsDelegate {
    func onCallEnded() {}
    func onSessionTimeout() {}
    func onCallEndButtonPressed() {}
    func onUserJoined(rtcUser: RTCUser) {}
    func onUserLeft(rtcUser: RTCUser) {}
    func onUserListChanged(rtcUsers: [RTCUser]) {}
    func onAudioModeChanged(mode: [AudioMode]) {}
    func onCallSwitchedToVideo(callSwitchedInfo: CallSwitchRequestInfo) {}
    func onUserMuted(rtcMutedUser: RTCMutedUser) {}
    func onRecordingToggled(recordingInfo: RTCRecordingInfo) {}
}

extension CometChatCalls {
    /// v4 call settings, built by `CallSettingsBuilder`.
    @available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
    public struct CallSettings: @unchecked Sendable {
        public var defaultLayout: Bool = true
        public var isAudioOnly: Bool = false
        public var isSingleMode: Bool = false
        public var showSwitchToVideo: Bool = false
        public var enableVideoTileClick: Bool = true
        public var enableDraggableTile: Bool = true
        public var endCallButtonDisable: Bool = false
        public var showRecordingButton: Bool = false
        public var switchCameraDisable: Bool = false
        public var muteAudioDisable: Bool = false
        public var pauseVideoDisable: Bool = false
        public var audioModeDisable: Bool = false
        public var startAudioMuted: Bool = false
        public var startVideoMuted: Bool = false
        public var mode: DisplayMode = .default
        public var avatarMode: AvatarMode = .circle
        public var defaultAudioMode: AudioMode = .speaker
        public var idleTimeoutPeriod: Int = 180
        public weak var delegate: (any CallsEventsDelegate)?

        /// The v5 settings these map onto (v4 → v5: isAudioOnly → `.voice`, showRecordingButton(b)
        /// → hideRecordingButton(!b), defaultLayout(b) → hideControlPanel(!b) + hideHeaderPanel(!b), …).
        public var sessionSettings: SessionSettingsBuilder.SessionSettings {
            let b = SessionSettingsBuilder()
                .setSessionType(isAudioOnly ? .voice : .video)
                .hideRecordingButton(!showRecordingButton)
                .hideControlPanel(!defaultLayout)
                .hideHeaderPanel(!defaultLayout)
                .hideLeaveSessionButton(endCallButtonDisable)
                .hideSwitchCameraButton(switchCameraDisable)
                .hideToggleAudioButton(muteAudioDisable)
                .hideToggleVideoButton(pauseVideoDisable)
                .hideAudioModeButton(audioModeDisable)
                .startAudioMuted(startAudioMuted)
                .startVideoPaused(startVideoMuted)
                .setLayout(mode == .spotlight || mode == .single ? .spotlight : .tile)
                .setAudioMode(defaultAudioMode)
                .setIdleTimeoutPeriod(idleTimeoutPeriod)
            return b.build()
        }
    }

    /// v4: `CometChatCalls.CallSettingsBuilder.setDefaultLayout(true).setIsAudioOnly(false).setDelegate(self).build()`.
    /// Each setter exists as a static (starting a builder) and as an instance method (chaining).
    @available(*, deprecated, message: "CometChatCalls v4 API: use SessionSettingsBuilder and CallSession listeners")
    public final class CallSettingsBuilder {
        private var settings = CallSettings()
        public init() {}

        /// Show the built-in call UI (false hides the control bar and header). Default `true`.
        @discardableResult public func setDefaultLayout(_ value: Bool) -> CallSettingsBuilder { settings.defaultLayout = value; return self }
        public static func setDefaultLayout(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setDefaultLayout(value) }
        /// Audio-only (a `.voice` session). Default `false`.
        @discardableResult public func setIsAudioOnly(_ value: Bool) -> CallSettingsBuilder { settings.isAudioOnly = value; return self }
        public static func setIsAudioOnly(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setIsAudioOnly(value) }
        /// Single-participant mode (stored; v4 UI hint). Default `false`.
        @discardableResult public func setIsSingleMode(_ value: Bool) -> CallSettingsBuilder { settings.isSingleMode = value; return self }
        public static func setIsSingleMode(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setIsSingleMode(value) }
        /// Show the switch-to-video button (stored). Default `false`.
        @discardableResult public func setShowSwitchToVideo(_ value: Bool) -> CallSettingsBuilder { settings.showSwitchToVideo = value; return self }
        public static func setShowSwitchToVideo(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setShowSwitchToVideo(value) }
        /// Tiles react to clicks (stored). Default `true`.
        @discardableResult public func setEnableVideoTileClick(_ value: Bool) -> CallSettingsBuilder { settings.enableVideoTileClick = value; return self }
        public static func setEnableVideoTileClick(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setEnableVideoTileClick(value) }
        /// Draggable tiles (stored). Default `true`.
        @discardableResult public func setEnableDraggableTile(_ value: Bool) -> CallSettingsBuilder { settings.enableDraggableTile = value; return self }
        public static func setEnableDraggableTile(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setEnableDraggableTile(value) }
        /// Hide the end-call button. Default `false`.
        @discardableResult public func setEndCallButtonDisable(_ value: Bool) -> CallSettingsBuilder { settings.endCallButtonDisable = value; return self }
        public static func setEndCallButtonDisable(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setEndCallButtonDisable(value) }
        /// Show the recording button. Default `false`.
        @discardableResult public func setShowRecordingButton(_ value: Bool) -> CallSettingsBuilder { settings.showRecordingButton = value; return self }
        public static func setShowRecordingButton(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setShowRecordingButton(value) }
        /// Hide the switch-camera button. Default `false`.
        @discardableResult public func setSwitchCameraButtonDisable(_ value: Bool) -> CallSettingsBuilder { settings.switchCameraDisable = value; return self }
        public static func setSwitchCameraButtonDisable(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setSwitchCameraButtonDisable(value) }
        /// Hide the mute button. Default `false`.
        @discardableResult public func setMuteAudioButtonDisable(_ value: Bool) -> CallSettingsBuilder { settings.muteAudioDisable = value; return self }
        public static func setMuteAudioButtonDisable(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setMuteAudioButtonDisable(value) }
        /// Hide the pause-video button. Default `false`.
        @discardableResult public func setPauseVideoButtonDisable(_ value: Bool) -> CallSettingsBuilder { settings.pauseVideoDisable = value; return self }
        public static func setPauseVideoButtonDisable(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setPauseVideoButtonDisable(value) }
        /// Hide the audio-mode button. Default `false`.
        @discardableResult public func setAudioModeButtonDisable(_ value: Bool) -> CallSettingsBuilder { settings.audioModeDisable = value; return self }
        public static func setAudioModeButtonDisable(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setAudioModeButtonDisable(value) }
        /// Join muted. Default `false`.
        @discardableResult public func setStartAudioMuted(_ value: Bool) -> CallSettingsBuilder { settings.startAudioMuted = value; return self }
        public static func setStartAudioMuted(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setStartAudioMuted(value) }
        /// Join with video paused. Default `false`.
        @discardableResult public func setStartVideoMuted(_ value: Bool) -> CallSettingsBuilder { settings.startVideoMuted = value; return self }
        public static func setStartVideoMuted(_ value: Bool) -> CallSettingsBuilder { CallSettingsBuilder().setStartVideoMuted(value) }
        /// Layout: `.default` (tile), `.single`, `.spotlight`. Default `.default`.
        @discardableResult public func setMode(_ value: DisplayMode) -> CallSettingsBuilder { settings.mode = value; return self }
        public static func setMode(_ value: DisplayMode) -> CallSettingsBuilder { CallSettingsBuilder().setMode(value) }
        /// Avatar shape (stored). Default `.circle`.
        @discardableResult public func setAvatarMode(_ value: AvatarMode) -> CallSettingsBuilder { settings.avatarMode = value; return self }
        public static func setAvatarMode(_ value: AvatarMode) -> CallSettingsBuilder { CallSettingsBuilder().setAvatarMode(value) }
        /// Initial audio route. Default `.speaker`.
        @discardableResult public func setDefaultAudioMode(_ value: AudioMode) -> CallSettingsBuilder { settings.defaultAudioMode = value; return self }
        public static func setDefaultAudioMode(_ value: AudioMode) -> CallSettingsBuilder { CallSettingsBuilder().setDefaultAudioMode(value) }
        /// Seconds alone before the session ends (v4 default 180). Default `180`.
        @discardableResult public func setIdleTimeoutPeriod(_ value: Int) -> CallSettingsBuilder { settings.idleTimeoutPeriod = value; return self }
        public static func setIdleTimeoutPeriod(_ value: Int) -> CallSettingsBuilder { CallSettingsBuilder().setIdleTimeoutPeriod(value) }
        @discardableResult public func setDelegate(_ delegate: any CallsEventsDelegate) -> CallSettingsBuilder { settings.delegate = delegate; return self }
        public static func setDelegate(_ delegate: any CallsEventsDelegate) -> CallSettingsBuilder { CallSettingsBuilder().setDelegate(delegate) }
        public func build() -> CallSettings { settings }
    }
}

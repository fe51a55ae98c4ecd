/// Voice-only or audio+video session.
public enum SessionType: String, Sendable, CaseIterable {
    case video
    case voice
    @available(*, deprecated, renamed: "voice")
    public static var audio: SessionType { .voice }
    @available(*, deprecated, renamed: "video")
    public static var audioVideo: SessionType { .video }
}

/// How participant tiles are arranged.
public enum LayoutType: String, Sendable, CaseIterable {
    case tile
    case spotlight
    case sidebar

    /// The string form `CallSession.setLayout(_:)` takes: `TILE`, `SPOTLIGHT`, `SIDEBAR`.
    public var value: String { rawValue.uppercased() }
}

/// Where audio plays. On Linux these map onto the playback devices present (docs/sdk.md).
public enum AudioMode: String, Sendable, CaseIterable {
    case speaker
    case earpiece
    case bluetooth
    case headphones

    /// `SPEAKER`, `EARPIECE`, `BLUETOOTH`, `HEADPHONES`.
    public var value: String { rawValue.uppercased() }
}

/// Which camera a video session starts with.
public enum CameraFacing: String, Sendable, CaseIterable {
    case FRONT
    case REAR
    @available(*, deprecated, renamed: "REAR")
    public static var BACK: CameraFacing { .REAR }
}

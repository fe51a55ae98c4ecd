/// Which video source a participant sends, as settings and command lines name it:
///
/// | spec | source |
/// |---|---|
/// | `auto` | the machine's camera (front: the first, rear: the second), else the test pattern |
/// | `v4l2:/dev/video0` | that camera |
/// | `pattern` | the test pattern (colour bars, a sweep, the capture time) |
/// | `avatar` | a synthetic face (the demo's bots) |
/// | `file:PATH.y4m` | a YUV4MPEG2 file, looped |
/// | `none` | no video |
public enum VideoSourceSpec: Sendable, Equatable {
    case auto
    case camera(String)
    case pattern
    case avatar
    case file(String)
    case none

    public init(_ spec: String) throws(VideoError) {
        switch spec {
        case "auto": self = .auto
        case "pattern": self = .pattern
        case "avatar": self = .avatar
        case "none": self = .none
        case _ where spec.hasPrefix("v4l2:") && spec.count > 5: self = .camera(String(spec.dropFirst(5)))
        case _ where spec.hasPrefix("file:") && spec.count > 5: self = .file(String(spec.dropFirst(5)))
        default: throw .device(spec, "not a video source (auto, v4l2:/dev/videoN, pattern, avatar, file:PATH.y4m, none)")
        }
    }

    /// Opens the source facing `facing`, sending `width` × `height`; nil for `.none`.
    public func open(name: String, facing: VideoFacing, width: Int, height: Int, fps: Int) throws(VideoError) -> (any VideoSource)? {
        switch self {
        case .none: return nil
        case .pattern: return TestPatternSource(name: name, width: width, height: height, facing: facing)
        case .avatar: return TestPatternSource(name: name, width: width, height: height, style: .avatar, facing: facing)
        case .file(let path): return try Y4MFileSource(path: path)
        case .camera(let path): return try V4L2Camera(path: path, width: width, height: height, fps: fps)
        case .auto:
            let cams = V4L2Camera.devices()
            let pick = facing == .rear && cams.count > 1 ? cams[1] : cams.first
            if let pick, let cam = try? V4L2Camera(path: pick.path, width: width, height: height, fps: fps) { return cam }
            return TestPatternSource(name: name, width: width, height: height, facing: facing)
        }
    }
}

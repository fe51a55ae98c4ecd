/// Where a participant's video comes from: a camera, a file, a synthetic pattern.
///
/// Thread rules: `read` from one thread (the video sender's, which paces it at the source's
/// frame rate); `close` from any thread, after which `read` throws `.closed`.
public protocol VideoSource: AnyObject, Sendable {
    /// For `callroom devices` and logs.
    var name: String { get }
    var width: Int { get }
    var height: Int { get }
    /// The next picture, made (or captured) at `nanoseconds` (monotonic). A camera blocks up to
    /// a frame time for it.
    func read(at nanoseconds: UInt64) throws(VideoError) -> VideoFrame
    func close()
}

/// Which way a camera faces (the SDK's `CameraFacing`): a machine with two sources maps them here.
public enum VideoFacing: String, Sendable, CaseIterable {
    case front = "FRONT"
    case rear = "REAR"
}

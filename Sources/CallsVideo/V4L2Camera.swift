import CV4L2
import CallsCore
import Foundation

/// A V4L2 camera through libv4l2 (Debian libv4l-dev), which converts whatever the camera
/// delivers (YUYV, MJPEG, …) to I420 for us. Frames are read with `v4l2_read` (libv4l2 maps
/// buffers underneath), at the size and rate the driver grants nearest to those asked for;
/// frames of another size are scaled to the asked size.
///
/// Thread rules: `read` from one thread (the video sender's); `close` from any. The descriptor
/// is owned and closed with the object.
public final class V4L2Camera: VideoSource {
    public let name: String
    public let path: String
    public let width: Int
    public let height: Int
    private let deviceWidth: Int
    private let deviceHeight: Int
    private let fd: Locked<Int32>
    /// The reader's frame buffer (never contended: `read` comes from one thread).
    private let buffer: Locked<[UInt8]>

    /// A camera on the machine (`callroom devices`).
    public struct Device: Sendable, Equatable {
        public var path: String
        public var card: String
        public var driver: String
    }

    /// The capture devices under /dev (video4linux nodes that can capture).
    public static func devices() -> [Device] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []
        return names.filter { $0.hasPrefix("video") }.sorted { $0.localizedStandardCompare($1) == .orderedAscending }.compactMap { n in
            let path = "/dev/" + n
            let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { Glibc.close(fd) }
            var cap = v4l2_capability()
            guard callroom_v4l2_querycap(fd, &cap) == 0 else { return nil }
            let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
            guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 else { return nil }
            return Device(path: path, card: Self.string(cap.card), driver: Self.string(cap.driver))
        }
    }

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    public init(path: String, width: Int = 320, height: Int = 180, fps: Int = 15) throws(VideoError) {
        let fd = callroom_v4l2_open(path)
        guard fd >= 0 else { throw .device(path, String(cString: strerror(errno))) }
        var cap = v4l2_capability()
        guard callroom_v4l2_querycap(fd, &cap) == 0 else {
            v4l2_close(fd)
            throw .device(path, "not a video4linux device")
        }
        var fmt = v4l2_format()
        fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        fmt.fmt.pix.width = UInt32(width)
        fmt.fmt.pix.height = UInt32(height)
        fmt.fmt.pix.pixelformat = Self.fourcc("YU12")
        fmt.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        guard callroom_v4l2_s_fmt(fd, &fmt) == 0, fmt.fmt.pix.pixelformat == Self.fourcc("YU12") else {
            v4l2_close(fd)
            throw .device(path, "cannot capture I420 (\(String(cString: strerror(errno))))")
        }
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(fps))
        _ = callroom_v4l2_s_parm(fd, &parm)  // a driver that keeps its own rate is fine: we pace
        self.path = path
        name = "v4l2:\(path) (\(Self.string(cap.card)))"
        self.width = width & ~1
        self.height = height & ~1
        deviceWidth = Int(fmt.fmt.pix.width) & ~1
        deviceHeight = Int(fmt.fmt.pix.height) & ~1
        buffer = Locked([UInt8](repeating: 0, count: max(Int(fmt.fmt.pix.sizeimage), VideoFrame.byteCount(width: deviceWidth, height: deviceHeight))))
        self.fd = Locked(fd)
    }

    deinit { close() }

    static func fourcc(_ s: String) -> UInt32 {
        let b = Array(s.utf8)
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    public func read(at nanoseconds: UInt64) throws(VideoError) -> VideoFrame {
        let d = fd.withLock { $0 }
        guard d >= 0 else { throw .closed }
        var p = pollfd(fd: d, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 200) > 0 else { throw .device(path, "no frame within 200 ms") }
        let size = VideoFrame.byteCount(width: deviceWidth, height: deviceHeight)
        let (n, failure, bytes) = buffer.withLock { b -> (Int, Int32, [UInt8]) in
            let n = b.withUnsafeMutableBytes { v4l2_read(d, $0.baseAddress, $0.count) }
            return (n, errno, n >= size ? Array(b[0..<size]) : [])
        }
        guard n >= size else {
            if fd.withLock({ $0 }) < 0 { throw .closed }
            throw .device(path, n < 0 ? String(cString: strerror(failure)) : "short frame (\(n) bytes)")
        }
        let f = VideoFrame(width: deviceWidth, height: deviceHeight, bytes: bytes, captureNanoseconds: nanoseconds)
        return f.scaled(width: width, height: height)
    }

    public func close() {
        let d = fd.withLock { v -> Int32 in defer { v = -1 }; return v }
        if d >= 0 { v4l2_close(d) }
    }
}

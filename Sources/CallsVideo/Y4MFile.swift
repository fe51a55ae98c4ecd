import CallsCore
import Foundation
import Synchronization

/// YUV4MPEG2 (`.y4m`): the plain raw-video file format ffmpeg, libvpx's tools and mpv read.
/// A header line (`YUV4MPEG2 W320 H180 F15:1 Ip A1:1 C420jpeg`), then per frame `FRAME\n` and
/// the I420 planes. `Y4MWriter` dumps received frames for QA (`--video-out`); `Y4MFileSource`
/// loops a file as a camera.
///
/// Thread rules: a writer belongs to one thread (the one that writes frames); the file is
/// closed with the object or by `close()`.
public final class Y4MWriter {
    public let path: String
    private let handle: FileHandle
    private var size: (Int, Int)?
    private let fps: Int
    public private(set) var framesWritten = 0

    public init(path: String, fps: Int = 15) throws(VideoError) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw .file(path, "cannot create it")
        }
        self.path = path
        self.fps = fps
        handle = h
    }

    /// Appends a frame; every frame of a file has the first frame's size (others are skipped).
    public func write(_ f: VideoFrame) throws(VideoError) {
        if size == nil {
            size = (f.width, f.height)
            try put(Data("YUV4MPEG2 W\(f.width) H\(f.height) F\(fps):1 Ip A1:1 C420jpeg\n".utf8))
        }
        guard let s = size, s == (f.width, f.height) else { return }
        try put(Data("FRAME\n".utf8) + Data(f.bytes))
        framesWritten += 1
    }

    private func put(_ d: Data) throws(VideoError) {
        do { try handle.write(contentsOf: d) } catch { throw .file(path, "write failed: \(error.localizedDescription)") }
    }

    public func close() { try? handle.close() }
    deinit { close() }
}

/// Reads every frame of a YUV4MPEG2 file (4:2:0 only).
public enum Y4MReader {
    public static func frames(atPath path: String) throws(VideoError) -> (fps: Int, frames: [VideoFrame]) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .file(path, "cannot read it") }
        let bytes = [UInt8](data)
        guard let nl = bytes.firstIndex(of: 10) else { throw .file(path, "not a YUV4MPEG2 file (no header line)") }
        let header = String(decoding: bytes[0..<nl], as: UTF8.self).split(separator: " ")
        guard header.first == "YUV4MPEG2" else { throw .file(path, "not a YUV4MPEG2 file") }
        var w = 0, h = 0, fps = 15
        for t in header.dropFirst() {
            switch t.first {
            case "W": w = Int(t.dropFirst()) ?? 0
            case "H": h = Int(t.dropFirst()) ?? 0
            case "F":
                let p = t.dropFirst().split(separator: ":").compactMap { Int($0) }
                if p.count == 2, p[1] > 0 { fps = max(1, p[0] / p[1]) }
            case "C":
                guard t.hasPrefix("C420") else { throw .file(path, "colour space \(t.dropFirst()) is not 4:2:0") }
            default: break
            }
        }
        guard w > 0, h > 0, w % 2 == 0, h % 2 == 0 else { throw .file(path, "frame size \(w)x\(h) must be even and positive") }
        let size = VideoFrame.byteCount(width: w, height: h)
        var frames: [VideoFrame] = []
        var i = nl + 1
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(of: 10), bytes[i..<min(end, i + 5)].elementsEqual("FRAME".utf8) else {
                throw .file(path, "frame \(frames.count + 1): no FRAME marker")
            }
            let start = end + 1
            guard start + size <= bytes.count else { throw .file(path, "frame \(frames.count + 1) is cut short") }
            frames.append(VideoFrame(width: w, height: h, bytes: Array(bytes[start..<(start + size)])))
            i = start + size
        }
        guard !frames.isEmpty else { throw .file(path, "no frames") }
        return (fps, frames)
    }
}

/// A video file played as a camera, looped: its frames in turn, one per `read`.
///
/// Thread rules: `read` from one thread; `close` from any.
public final class Y4MFileSource: VideoSource, Sendable {
    public let name: String
    public let width: Int
    public let height: Int
    public let fps: Int
    private let frames: [VideoFrame]
    private let next = Atomic<Int>(0)
    private let closed = Locked(false)

    public init(path: String) throws(VideoError) {
        let (fps, frames) = try Y4MReader.frames(atPath: path)
        name = "file:\((path as NSString).lastPathComponent)"
        self.fps = fps
        self.frames = frames
        width = frames[0].width
        height = frames[0].height
    }

    public func read(at nanoseconds: UInt64) throws(VideoError) -> VideoFrame {
        guard !closed.withLock({ $0 }) else { throw .closed }
        var f = frames[next.wrappingAdd(1, ordering: .relaxed).oldValue % frames.count]
        f.captureNanoseconds = nanoseconds
        return f
    }

    public func close() { closed.withLock { $0 = true } }
}

import CallsVideo
import Foundation
import Testing

/// Real VP8 (libvpx) on the synthetic camera: what goes in comes out — the bars' colours, the
/// stamped clock — and a keyframe comes when asked.
struct VP8CodecTests {
    static func near(_ a: Double, _ b: UInt8, _ tolerance: Double = 12) -> Bool { abs(a - Double(b)) <= tolerance }

    @Test func thePatternSurvivesEncodeAndDecode() throws {
        let source = TestPatternSource(name: "alice", width: 320, height: 180)
        let encoder = try VP8Encoder(.init(width: 320, height: 180, fps: 15, bitrateKbps: 300))
        let decoder = try VP8Decoder()
        var decoded: VideoFrame?
        var keyframes = 0, bytes = 0
        for i in 0..<30 {
            let frame = try source.read(at: UInt64(1_000_000_000 + i * 66_666_666))
            guard let e = try encoder.encode(frame) else { continue }
            if e.isKeyframe { keyframes += 1 }
            bytes += e.data.count
            decoded = try decoder.decode(e.data)?.frame
        }
        #expect(keyframes == 1, "only the first frame is a keyframe")
        let kbps = Double(bytes * 8) / 2.0 / 1000
        #expect(kbps < 450, "300 kb/s target: \(kbps)")
        let f = try #require(decoded)
        #expect(f.width == 320 && f.height == 180)
        // Every bar's colour, read in its middle.
        for (i, c) in TestPatternSource.bars.enumerated() {
            let x0 = i * 320 / 7 + 8
            let m = f.meanYUV(x: x0, y: 10, width: 24, height: 30)
            let want = YUV.from(r: c.r, g: c.g, b: c.b)
            #expect(Self.near(m.y, want.y) && Self.near(m.u, want.u) && Self.near(m.v, want.v), "bar \(i): \(m) vs \(want)")
        }
        // The last frame's capture time (1 s + 29 frames), in milliseconds.
        #expect(FrameStamp.read(f) == UInt32((1_000_000_000 + 29 * 66_666_666) / 1_000_000))
    }

    @Test func aKeyframeWhenAsked() throws {
        let source = TestPatternSource(name: "bob", width: 160, height: 90)
        let encoder = try VP8Encoder(.init(width: 160, height: 90, fps: 15, bitrateKbps: 150))
        var kinds: [Bool] = []
        for i in 0..<10 {
            let e = try #require(try encoder.encode(source.read(at: UInt64(i) * 66_000_000), keyframe: i == 6))
            kinds.append(e.isKeyframe)
        }
        #expect(kinds == [true, false, false, false, false, false, true, false, false, false])
    }

    @Test func aFrameOfAnotherSizeIsRefused() throws {
        let encoder = try VP8Encoder(.init(width: 160, height: 90))
        #expect(throws: VideoError.wrongSize(expected: "160x90", got: "320x180")) { try encoder.encode(VideoFrame(width: 320, height: 180)) }
        #expect(throws: VideoError.self) { try VP8Encoder(.init(width: 161, height: 90)) }
    }

    @Test func garbageDoesNotDecode() throws {
        let decoder = try VP8Decoder()
        #expect(throws: VideoError.self) { try decoder.decode([0x10, 0x02, 0x00, 0x9d, 0x01]) }
    }

    @Test func theStampReadsBackAndRejectsDamage() {
        var f = VideoFrame(width: 160, height: 90)
        FrameStamp.write(0xDEAD_BEEF, into: &f)
        #expect(FrameStamp.read(f) == 0xDEAD_BEEF)
        // One cell flipped: the check fails rather than reading a wrong time.
        for row in 76..<82 { for col in 0..<8 { f.bytes[row * 160 + col] = 255 - f.bytes[row * 160 + col] } }
        #expect(FrameStamp.read(f) == nil)
        #expect(FrameStamp.read(VideoFrame(width: 160, height: 90, y: 128)) == nil)
    }

    @Test func rearFacingDrawsTheBarsTheOtherWay() throws {
        let front = try TestPatternSource(name: "x", width: 160, height: 90, facing: .front).read(at: 0)
        let rear = try TestPatternSource(name: "x", width: 160, height: 90, facing: .rear).read(at: 0)
        #expect(front.meanLuma(x: 2, y: 4, width: 10, height: 10) > 200)  // white first
        #expect(rear.meanLuma(x: 2, y: 4, width: 10, height: 10) < 60)    // blue first
    }

    @Test func y4mRoundTrip() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("y4m-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("a.y4m").path
        let w = try Y4MWriter(path: path, fps: 15)
        let src = TestPatternSource(name: "y", width: 160, height: 90)
        var written: [VideoFrame] = []
        for i in 0..<3 { let f = try src.read(at: UInt64(i) * 1_000_000_000); written.append(f); try w.write(f) }
        w.close()
        let (fps, frames) = try Y4MReader.frames(atPath: path)
        #expect(fps == 15 && frames.map(\.bytes) == written.map(\.bytes))
        let looped = try Y4MFileSource(path: path)
        let fourth = (0..<4).compactMap { _ in try? looped.read(at: 0) }.last
        #expect(fourth?.bytes == written[0].bytes, "the file loops")
        try "YUV4MPEG2 W3 H2\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: VideoError.self) { try Y4MReader.frames(atPath: path) }
    }
}

/// Cameras: a machine without one lists none, and a camera that is not there fails with its
/// path and the reason (the join turns it into VIDEO_ERROR); `auto` falls back to the pattern.
struct CameraTests {
    @Test func aMissingCameraIsAClearErrorAndAutoFallsBack() throws {
        #expect(throws: VideoError.self) { try V4L2Camera(path: "/dev/video-callroom-none") }
        do { _ = try V4L2Camera(path: "/dev/video-callroom-none") } catch {
            #expect("\(error)".contains("/dev/video-callroom-none"))
        }
        #expect(throws: VideoError.self) { try VideoSourceSpec("webcam") }
        #expect(try VideoSourceSpec("v4l2:/dev/video3") == .camera("/dev/video3"))
        if V4L2Camera.devices().isEmpty {
            let source = try VideoSourceSpec("auto").open(name: "n", facing: .front, width: 160, height: 90, fps: 15)
            #expect(source is TestPatternSource, "no camera here: the test pattern")
        }
        #expect(try VideoSourceSpec("none").open(name: "n", facing: .front, width: 160, height: 90, fps: 15) == nil)
    }
}

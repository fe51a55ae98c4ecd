import CallRoomTestSupport
import CallsAudio
@testable import CallsRecording
import CallsVideo
import Foundation
import XCTest

/// A participant's audio (Ogg Opus) and video (VP8 as it came, in IVF) put into one WebM by
/// libavformat, checked from outside by ffprobe: both streams, the length, the offset between
/// them as it was in the call, every frame there.
final class WebMMuxerTests: XCTestCase {
    var dir: TemporaryDirectory!
    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe"), "needs ffmpeg's ffprobe (scripts/install-deps.sh)")
        dir = TemporaryDirectory("callroom-webm")
    }
    override func tearDown() { dir?.remove() }

    /// ffprobe's JSON: streams and format.
    static func probe(_ path: String) throws -> [String: Any] {
        let p = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", "-show_format", "-count_packets", path])
        XCTAssertEqual(p.wait(timeout: 20), 0, p.errorOutput)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(p.output.joined(separator: "\n").utf8)) as? [String: Any])
    }

    func testAudioAndVideoBecomeOneWebMWithTheirOffsetKept() throws {
        // 3 s of a tone from the call's 1000 ms; video from 1500 ms: 2.5 s at 15 fps.
        let enc = try OpusEncoder(frameMs: 20)
        let tone = ToneInput(frequency: 440, frameSamples: 960)
        var pcm = [Int16](repeating: 0, count: 960), out = [UInt8](repeating: 0, count: 1500)
        let audio = dir.file("p.opus")
        let w = try OggOpusWriter(path: audio, serial: 3, tags: [OggOpusMixdown.offsetTag: "1000"])
        for i in 0..<150 {
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let n = try pcm.withUnsafeBufferPointer { p in try out.withUnsafeMutableBufferPointer { try enc.encode(p, into: $0) } }
            try w.append(Array(out.prefix(n)), timestamp: UInt32(i * 960))
        }
        try w.finish()
        let video = dir.file("p.ivf")
        let track = VP8TrackWriter(path: video)
        let source = TestPatternSource(name: "Ann")
        let vp8 = try VP8Encoder(.init())
        var written = 0
        for i in 0..<38 {
            let frame = try source.read(at: UInt64(i) * 66_666_667)
            guard let e = try vp8.encode(frame, keyframe: i == 0) else { continue }
            if try track.append(e.data, isKeyframe: e.isKeyframe, atMs: 1500 + Int64(i) * 67) { written += 1 }
        }
        try track.finish()
        XCTAssertEqual(track.firstMs, 1500)
        XCTAssertGreaterThan(written, 30)
        let webm = dir.file("p.webm")
        try WebMMuxer.mux(audio: .init(audio, startMs: 1000), video: .init(video, startMs: track.firstMs ?? 0), into: webm)
        let info = try Self.probe(webm)
        let streams = try XCTUnwrap(info["streams"] as? [[String: Any]])
        XCTAssertEqual(Set(streams.compactMap { $0["codec_name"] as? String }), ["vp8", "opus"], "\(streams)")
        let v = try XCTUnwrap(streams.first { $0["codec_name"] as? String == "vp8" })
        let a = try XCTUnwrap(streams.first { $0["codec_name"] as? String == "opus" })
        XCTAssertEqual(v["width"] as? Int, 320)
        XCTAssertEqual(Int(v["nb_read_packets"] as? String ?? ""), written, "every frame written")
        let format = try XCTUnwrap(info["format"] as? [String: Any])
        XCTAssertEqual(format["format_name"] as? String, "matroska,webm")
        let duration = try XCTUnwrap(Double(format["duration"] as? String ?? ""))
        XCTAssertEqual(duration, 3.0, accuracy: 0.1, "the audio's 3 s (the video ends within it)")
        // The video starts 0.5 s after the audio, as in the call.
        let offset = try XCTUnwrap(Double(v["start_time"] as? String ?? "")) - (Double(a["start_time"] as? String ?? "") ?? 0)
        XCTAssertEqual(offset, 0.5, accuracy: 0.03, "A/V offset \(offset) s")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: webm)[.posixPermissions] as? Int, 0o600)
    }

    /// A participant muted throughout: the video alone, every frame, its length.
    func testVideoWithoutAudioBecomesAWebMOfTheVideoAlone() throws {
        let video = dir.file("q.ivf")
        let track = VP8TrackWriter(path: video)
        let source = TestPatternSource(name: "Cy", width: 160, height: 90)
        let vp8 = try VP8Encoder(.init(width: 160, height: 90))
        var written = 0
        for i in 0..<30 {  // 2 s at 15 fps
            guard let e = try vp8.encode(try source.read(at: UInt64(i) * 66_666_667), keyframe: i == 0) else { continue }
            if try track.append(e.data, isKeyframe: e.isKeyframe, atMs: 700 + Int64(i) * 67) { written += 1 }
        }
        try track.finish()
        let webm = dir.file("q.webm")
        try WebMMuxer.mux(audio: nil, video: .init(video, startMs: 700), into: webm)
        let info = try Self.probe(webm)
        let streams = try XCTUnwrap(info["streams"] as? [[String: Any]])
        XCTAssertEqual(streams.compactMap { $0["codec_name"] as? String }, ["vp8"])
        XCTAssertEqual(Int(streams.first?["nb_read_packets"] as? String ?? ""), written)
        let duration = try XCTUnwrap(Double((info["format"] as? [String: Any])?["duration"] as? String ?? ""))
        XCTAssertEqual(duration, 2.0, accuracy: 0.1)
        XCTAssertEqual(WebMMuxer.durationMs(webm).map { Double($0) / 1000 } ?? 0, duration, accuracy: 0.01)
    }

    /// Frames timed by the sender's capture clock, not by their arrival: a network's jitter (±30
    /// ms) leaves the frames 66–67 ms apart in the file, placed by the least-delayed one; a
    /// sender whose clock jumps (5 s of capture time in one frame, arriving 67 ms later) is
    /// followed by arrival from there.
    func testFramesAreTimedByTheSendersClockNotTheNetworksJitter() throws {
        let video = dir.file("j.ivf")
        let track = VP8TrackWriter(path: video)
        let source = TestPatternSource(name: "Di", width: 160, height: 90)
        let vp8 = try VP8Encoder(.init(width: 160, height: 90))
        let jitter: [Int64] = [0, 25, -10, 30, 5, -20, 15, 0, 28, -5]
        var rtp: UInt32 = 4_294_000_000  // (wraps within the track)
        for i in 0..<60 {
            guard let e = try vp8.encode(try source.read(at: UInt64(i) * 66_666_667), keyframe: i == 0) else { continue }
            let arrival = 1000 + Int64(i) * 200 / 3 + jitter[i % jitter.count] + 30  // (≥ the capture time: delay 0–60 ms)
            if i == 40 { rtp &+= 450_000 }  // the sender's clock jumps 5 s
            XCTAssertTrue(try track.append(e.data, isKeyframe: e.isKeyframe, atMs: arrival, rtpTimestamp: rtp))
            rtp &+= 6000
        }
        try track.finish()
        let p = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts", "-of", "csv=p=0", video])
        XCTAssertEqual(p.wait(timeout: 20), 0, p.errorOutput)
        let pts = p.output.compactMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: ",").first ?? "") }
        XCTAssertEqual(pts.count, 60)
        let gaps = zip(pts.dropFirst(), pts).map { $0 - $1 }
        // Placed by the least-delayed frame: the first few gaps take up what the first frame was
        // late (as do the few after the jump, placed anew by arrival).
        for (i, g) in gaps.enumerated() where !(0..<6).contains(i) && !(39..<45).contains(i) {
            XCTAssertTrue((66...67).contains(g), "gap \(i) is \(g) ms: \(gaps)")
        }
        XCTAssertTrue((30...110).contains(gaps[39]), "after the clock's jump the track follows arrival: \(gaps[39]) ms")
        XCTAssertTrue(gaps.allSatisfy { (50...110).contains($0) }, "never a jitter's worth off: \(gaps)")
        // Without RTP timestamps: arrival, jitter and all.
        let plain = VP8TrackWriter(path: dir.file("k.ivf"))
        let key = try XCTUnwrap(try VP8Encoder(.init(width: 160, height: 90)).encode(try source.read(at: 0), keyframe: true))
        XCTAssertTrue(try plain.append(key.data, isKeyframe: true, atMs: 500))
        XCTAssertTrue(try plain.append(key.data, isKeyframe: true, atMs: 590))
        XCTAssertEqual(plain.lastMs, 90)
        try plain.finish()
    }

    func testNothingBeforeTheFirstKeyframeAndTheSizeFromIt() throws {
        let vp8 = try VP8Encoder(.init(width: 160, height: 90))
        let source = TestPatternSource(name: "Bo", width: 160, height: 90)
        let key = try XCTUnwrap(try vp8.encode(try source.read(at: 0), keyframe: true))
        let delta = try XCTUnwrap(try vp8.encode(try source.read(at: 66_666_667)))
        XCTAssertFalse(delta.isKeyframe)
        XCTAssertTrue(VP8TrackWriter.keyframeSize(key.data)! == (160, 90))
        XCTAssertNil(VP8TrackWriter.keyframeSize(delta.data))
        let track = VP8TrackWriter(path: dir.file("t.ivf"))
        XCTAssertFalse(try track.append(delta.data, isKeyframe: false, atMs: 10), "no keyframe yet")
        XCTAssertFalse(track.started)
        XCTAssertTrue(try track.append(key.data, isKeyframe: true, atMs: 20))
        XCTAssertTrue(try track.append(delta.data, isKeyframe: false, atMs: 20), "a frame in the same millisecond is one later")
        try track.finish()
        XCTAssertEqual(track.frames, 2)
    }
}

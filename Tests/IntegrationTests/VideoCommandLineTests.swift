import CallRoomTestSupport
import CallsVideo
import Foundation
import XCTest

/// Video from the command line, between real processes: a `callroomd`, one `callroom join
/// --headless --video pattern` and one `--video none --video-out DIR` whose dump is checked
/// from outside (frames, the bars' colours, the stamped clock); bad flags are refused clearly.
final class VideoCommandLineTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var server: CallroomdProcess!
    var url: String { server.url }
    var authKey: String { server.authKey }

    override func setUpWithError() throws {
        tmp = TemporaryDirectory("callroom-video")
        server = try CallroomdProcess(dataDir: tmp.file("data"))
    }

    override func tearDown() {
        _ = server?.stop()
        tmp.remove()
    }

    func join(_ uid: String, _ extra: [String]) throws -> ManagedProcess {
        try ManagedProcess(BuiltProducts.path("callroom"), ["join", "vroom", "--server", url, "--uid", uid, "--auth-key", authKey,
                                                            "--input", "null", "--output", "null", "--headless"] + extra)
    }

    func testHeadlessVideoOutDumpsWhatArrived() throws {
        let dir = tmp.file("frames")
        let alice = try join("alice", ["--video", "pattern"])
        XCTAssertNotNil(alice.waitForLine { $0.contains("onSessionJoined") }, alice.errorOutput)
        let bob = try join("bob", ["--video", "none", "--video-out", dir])
        XCTAssertNotNil(bob.waitForLine { $0.contains("onSessionJoined") }, bob.errorOutput)
        Thread.sleep(forTimeInterval: 3)
        bob.send("leave")
        XCTAssertEqual(bob.wait(timeout: 10), 0, bob.errorOutput)
        alice.send("leave")
        XCTAssertEqual(alice.wait(timeout: 10), 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".y4m") }
        XCTAssertEqual(files.count, 1, "one file: alice's (bob sends none): \(files)")
        let (fps, frames) = try Y4MReader.frames(atPath: dir + "/" + (files.first ?? ""))
        XCTAssertEqual(fps, 15)
        XCTAssertGreaterThan(frames.count, 25, "about 15 a second for 3 s")
        let last = try XCTUnwrap(frames.last)
        XCTAssertEqual(last.width, 320)
        for (i, c) in TestPatternSource.bars.enumerated() {
            let m = last.meanYUV(x: i * 320 / 7 + 8, y: 10, width: 24, height: 30)
            XCTAssertEqual(m.y, Double(YUV.from(r: c.r, g: c.g, b: c.b).y), accuracy: 14, "bar \(i)")
        }
        // Stamps increase frame to frame: a live picture, not one frame repeated.
        let stamps = frames.suffix(10).compactMap(FrameStamp.read)
        XCTAssertEqual(stamps.count, 10, "every frame's clock reads")
        XCTAssertEqual(stamps, stamps.sorted())
        XCTAssertGreaterThan((stamps.last ?? 0) &- (stamps.first ?? 0), 400, "10 frames span ~600 ms")
    }

    func testBadVideoFlagsAreRefused() throws {
        for (args, message) in [(["--video", "webcam"], "not a video source"), (["--video-out", "/tmp/x"], "--video-out needs --video"),
                                (["--video", "pattern", "--video-out", "/proc/nope/x"], "--video-out")] {
            let p = try join("carol", args)
            XCTAssertEqual(p.wait(timeout: 10), 2, "\(args)")
            XCTAssertTrue(p.errorOutput.contains(message), "\(args): \(p.errorOutput)")
        }
        let screen = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "vroom", "--server", url, "--uid", "dan", "--auth-key", authKey,
                                                                          "--video", "pattern", "--video-out", tmp.file("f")])
        XCTAssertEqual(screen.wait(timeout: 10), 2)
        XCTAssertTrue(screen.errorOutput.contains("needs --headless"), screen.errorOutput)
        let missing = try join("erin", ["--video", "file:/nonexistent.y4m"])
        XCTAssertEqual(missing.wait(timeout: 10), 1)
        XCTAssertTrue(missing.errorOutput.contains("VIDEO_ERROR") && missing.errorOutput.contains("/nonexistent.y4m"), missing.errorOutput)
    }
}

import CallRoomTestSupport
import CallsVideo
import Foundation
import XCTest
@testable import CallroomKit

/// `--video-out`: a participant's frames of each size in a file of their own (a Y4M file holds
/// one size), back to the earlier file when the size returns, and a bound on the files.
final class VideoDumpTests: XCTestCase {
    func testEachFrameSizeGoesToItsOwnFileAndTheFilesAreBounded() throws {
        let tmp = TemporaryDirectory("callroom-video-dump")
        defer { tmp.remove() }
        let dump = try VideoDump(directory: tmp.path)
        let camera = VideoFrame(width: 64, height: 48, y: 80), screen = VideoFrame(width: 80, height: 60, y: 200)
        for frame in [camera, camera, screen, screen, screen, camera] { dump.write(pid: "ada", frame: frame) }
        dump.write(pid: "bob", frame: screen)
        dump.close()
        let read = { (name: String) in try Y4MReader.frames(atPath: tmp.path + "/" + name).frames }
        XCTAssertEqual(try read("ada.y4m").map(\.width), [64, 64, 64], "the first size, and its return")
        XCTAssertEqual(try read("ada-80x60.y4m").map(\.width), [80, 80, 80])
        XCTAssertEqual(try read("ada-80x60.y4m").first?.bytes.first, 200, "the frames as written")
        XCTAssertEqual(try read("bob.y4m").count, 1, "another participant's first size is their own PID.y4m")
        // A sender changing size without end: at most `maxFilesPerParticipant` files, the sizes seen go on.
        let flood = try VideoDump(directory: tmp.path + "/flood")
        for i in 0..<(VideoDump.maxFilesPerParticipant + 4) { flood.write(pid: "eve", frame: VideoFrame(width: 16 + 2 * i, height: 16)) }
        flood.write(pid: "eve", frame: VideoFrame(width: 16, height: 16))
        flood.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.path + "/flood")
        XCTAssertEqual(files.count, VideoDump.maxFilesPerParticipant, "\(files.sorted())")
        XCTAssertEqual(try Y4MReader.frames(atPath: tmp.path + "/flood/eve.y4m").frames.count, 2, "its first size still written")
    }
}

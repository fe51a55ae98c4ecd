import CallsVideo
@testable import CallsTUI
import CometChatCallsSDK
import XCTest

/// Tiles with live video: the picture fills the tile (in the terminal's picture mode), the name
/// and state badges stay readable over it, paused cameras show the initials, and the screen
/// names exactly the tiles it drew big enough for video (what the call screen subscribes to).
final class VideoTileTests: XCTestCase {
    static let pattern = (try? TestPatternSource(name: "ada", width: 320, height: 180).read(at: 0)) ?? VideoFrame(width: 320, height: 180)

    func withVideo(_ m: inout CallViewModel, _ pids: [String], mode: PictureMode = .truecolor) {
        m.pictureMode = mode
        for (i, pid) in pids.enumerated() { m.video[pid] = TileVideo(frame: Self.pattern, serial: UInt64(i + 1), mirrored: pid == "pid-you") }
    }

    func pictureCells(_ b: ScreenBuffer, in r: Rect) -> Int {
        var n = 0
        for y in r.y..<r.maxY { for x in r.x..<r.maxX where b[x, y].style.isPicture { n += 1 } }
        return n
    }

    func testVideoFillsTheTileUnderItsBadges() {
        var m = Fixture.model(count: 4)
        withVideo(&m, ["pid-you", "pid-u1", "pid-u2"])
        let b = CallScreenRenderer.render(m, width: 120, height: 40)
        let text = b.text
        for name in ["You (you)", "Ada Lovelace", "Grace Hopper", "Alan Turing"] { XCTAssertTrue(text.contains(name), name) }
        XCTAssertTrue(text.contains("muted"), "Grace's mute badge over her picture")
        let area = CallScreenRenderer.layout(for: m, width: 120, height: 40).tiles
        XCTAssertGreaterThan(pictureCells(b, in: area), 600, "three pictures drawn in colour")
        XCTAssertTrue(text.contains("▄"), "half blocks")
        XCTAssertEqual(b.videoTiles, ["pid-u1", "pid-u2", "pid-u3"], "every other tile is big enough for video")
    }

    func testNoColourMeansCharactersOnlyAndASCIIUnderLANGC() {
        var m = Fixture.model(count: 2)
        withVideo(&m, ["pid-u1"], mode: .monochrome)
        let mono = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertEqual(pictureCells(mono, in: Rect(x: 0, y: 0, width: 80, height: 24)), 0)
        XCTAssertTrue(mono.text.contains("███"), "brightness as block shapes in the terminal's own colours")
        withVideo(&m, ["pid-u1"], mode: .indexed256)
        let ascii = CallScreenRenderer.render(m, width: 80, height: 24, unicode: false)
        XCTAssertTrue(ascii.text.unicodeScalars.allSatisfy(\.isASCII), "LANG=C: ASCII only")
        XCTAssertGreaterThan(pictureCells(ascii, in: Rect(x: 0, y: 0, width: 80, height: 24)), 100, "colours still")
    }

    func testAPausedCameraShowsTheInitials() {
        var m = Fixture.model(count: 2)
        withVideo(&m, ["pid-u1"])
        var ps = [Fixture.participant("you", "You"), Fixture.participant("u1", "Ada Lovelace")]
        ps[1].isVideoPaused = true
        m.apply(.participantListChanged(participants: ps), localPID: "pid-you", at: Date(timeIntervalSince1970: 0))
        let b = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertEqual(pictureCells(b, in: Rect(x: 0, y: 0, width: 80, height: 24)), 0)
        XCTAssertTrue(b.text.contains("cam off"))
    }

    func testOnlyTheTilesOnScreenAreSubscribed() {
        var m = Fixture.model(count: 25)
        withVideo(&m, (1..<25).map { "pid-u\($0)" })
        XCTAssertEqual(CallScreenRenderer.render(m, width: 80, height: 24).videoTiles, [], "80x24: 25 tiles are name plates")
        m.logHidden = true
        XCTAssertEqual(CallScreenRenderer.render(m, width: 160, height: 50).videoTiles.count, 24, "160x50: everyone")
        let tiny = CallScreenRenderer.render(m, width: 40, height: 12)
        XCTAssertEqual(tiny.videoTiles, [], "40x12 draws no tile big enough for video")
        m.layout = .spotlight
        m.dominantPID = "pid-u3"
        let spot = CallScreenRenderer.render(m, width: 120, height: 40)
        XCTAssertEqual(spot.videoTiles.first, "pid-u3", "the spotlight's speaker first")
        XCTAssertLessThan(spot.videoTiles.count, 12, "the strip shows a page of the others: \(spot.videoTiles.count)")
    }

    func testAFrameIsRenderedOncePerSize() {
        var m = Fixture.model(count: 2)
        withVideo(&m, ["pid-u1"])
        let before = PictureRenderers.shared.rendered.withLock { $0 }
        let a = CallScreenRenderer.render(m, width: 120, height: 40)
        XCTAssertEqual(PictureRenderers.shared.rendered.withLock { $0 }, before + 1)
        m.now = m.now.addingTimeInterval(1)  // another redraw, same frame: the cached picture
        let b = CallScreenRenderer.render(m, width: 120, height: 40)
        XCTAssertEqual(PictureRenderers.shared.rendered.withLock { $0 }, before + 1, "no new picture for the same frame and size")
        XCTAssertEqual(a.cells.filter(\.style.isPicture), b.cells.filter(\.style.isPicture))
        _ = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertEqual(PictureRenderers.shared.rendered.withLock { $0 }, before + 2, "another size: a new picture")
    }
}

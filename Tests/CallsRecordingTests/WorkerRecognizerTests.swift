@testable import CallsCaptions
import CallRoomTestSupport
import Foundation
import XCTest

/// `WorkerRecognizer`'s bookkeeping of requests and answers, against a worker that speaks the
/// real protocol (caption_worker.py's `serve`, under a caption engine's Python) and answers what
/// it was sent ("partial 9600"), a partial slowly — so what is in flight when is known.
final class WorkerRecognizerTests: XCTestCase {
    private var tmp: TemporaryDirectory!
    override func setUp() { tmp = TemporaryDirectory("callroom-worker") }
    override func tearDown() { tmp.remove() }

    /// A way to start a worker running `body` (Python, after `import caption_worker`) under a
    /// caption engine's interpreter.
    func worker(_ name: String, _ body: String) throws -> @Sendable () throws(CaptionError) -> RecognizerWorker {
        let python = try XCTUnwrap([MoonshineEngine.defaultPython, WhisperEngine.defaultPython].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "no caption engine installed (scripts/install-deps.sh)")
        let protocolDir = (try XCTUnwrap(RecognizerWorker.script("caption_worker")) as NSString).deletingLastPathComponent
        let script = tmp.file("\(name).py")
        try ("import os, sys, time\nsys.path.insert(0, os.environ[\"CALLROOM_PROTOCOL_DIR\"])\nimport caption_worker\n" + body)
            .write(toFile: script, atomically: true, encoding: .utf8)
        return { () throws(CaptionError) in
            try RecognizerWorker(engine: "echo", python: python, script: script, modelDir: nil, environment: ["CALLROOM_PROTOCOL_DIR": protocolDir])
        }
    }

    func recognizer() throws -> WorkerRecognizer {
        let start = try worker("echo-worker", """
        def recognise(audio, kind, waiting):
            if kind == "partial":
                time.sleep(0.3)
            return f"{kind} {len(audio)}"
        sys.exit(caption_worker.serve("echo", recognise, 16000 * 30))
        """)
        return try WorkerRecognizer(engine: "echo", language: "en-US", start: start)
    }

    /// A worker whose model cannot load (here: a compute type CTranslate2 would refuse) says
    /// why, and that reason is the error callroomd reports — not only that the worker exited.
    func testAModelThatCannotLoadIsToldWithItsReason() throws {
        let start = try worker("unloadable-worker", """
        def make():
            raise ValueError("requested int9 compute type, but the target device does not support it")
        model = caption_worker.load(make)
        sys.exit(caption_worker.serve("never", lambda audio, kind, waiting: "", 16000))
        """)
        XCTAssertThrowsError(try start()) { error in
            XCTAssertEqual("\(error)", "echo: the worker could not load its model: ValueError: requested int9 compute type, but the target device does not support it")
        }
    }

    func feed(_ r: WorkerRecognizer, seconds: Double) throws {
        let loud = (0..<Int(16_000 * seconds)).map { Int16(8000 * sin(Double($0) * 0.3)) }
        try loud.withUnsafeBufferPointer { p throws(CaptionError) in try r.feed(p) }
    }

    /// An utterance that ends with a guess still in flight (its pause's final pass kept) leaves
    /// that guess's answer behind; the next utterance — the pool may lend the recogniser to
    /// another speaker — starts with no guess, never the last one's words.
    func testAGuessAboutTheLastUtteranceIsNotTheNextOnes() throws {
        let r = try recognizer()
        try r.begin()
        try feed(r, seconds: 1)
        r.speechPaused()  // the pause's final pass, answered at once
        XCTAssertTrue(eventually(5, poll: 0.02) { r.partial() == "final 16000" }, r.partial())
        try feed(r, seconds: 0.6)  // more sound, not voice by the sender's flag: a guess is asked for
        XCTAssertEqual(r.partial(), "final 16000")
        XCTAssertEqual(try r.end(), "final 16000", "the pause's final pass is kept: no voice came since")
        try r.begin()  // the guess about 1.6 s is still in flight here
        XCTAssertEqual(r.partial(), "", "a new utterance starts with no guess")
        try feed(r, seconds: 0.5)
        XCTAssertTrue(eventually(5, poll: 0.02) { r.partial() == "partial 8000" }, r.partial())
        XCTAssertEqual(try r.end(), "final 8000")
    }
}

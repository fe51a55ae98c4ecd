@testable import CallsCaptions
import Foundation
import XCTest

/// caption_worker.py, the protocol and text guards every caption worker imports, run by a
/// worker engine's Python (it needs numpy).
final class CaptionWorkerScriptTests: XCTestCase {
    /// Runs `program` with caption_worker.py's directory on the path; its standard output.
    func python(_ program: String, _ arguments: [String] = [], input: Data = Data()) throws -> (status: Int32, out: Data) {
        let script = try XCTUnwrap(RecognizerWorker.script("caption_worker"))
        let interpreter = [MoonshineEngine.defaultPython, WhisperEngine.defaultPython].first { FileManager.default.isExecutableFile(atPath: $0) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try XCTUnwrap(interpreter, "no caption engine installed (scripts/install-deps.sh)"))
        p.arguments = ["-c", "import sys; sys.path.insert(0, sys.argv[1]); del sys.argv[1]\n" + program,
                       (script as NSString).deletingLastPathComponent] + arguments
        let out = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardInput = inp
        try p.run()
        inp.fileHandleForWriting.write(input)
        try inp.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, data)
    }

    /// A guess is cut where the model starts saying again what it just said (Whisper's quick
    /// pass loops on a second of audio); speech that says something twice in other words is kept.
    func testAGuessIsCutWhereItLoops() throws {
        let cases = [("Good morning. Good morning, good morning.", "Good morning."),
                     ("Quick up, get from. Quick up get from, Quick up", "Quick up, get from."),
                     ("Can a machine tell when it is talking to a person? Can a machine tell when it is tal",
                      "Can a machine tell when it is talking to a person?"),
                     ("I had had enough of it", "I had had enough of it"),
                     ("no no no, I said no", "no no no, I said no")]
        let (status, out) = try python("import caption_worker, json\nprint(json.dumps([caption_worker.cut_loop(t) for t in json.loads(sys.argv[1])]))",
                                       [String(decoding: try JSONSerialization.data(withJSONObject: cases.map(\.0)), as: UTF8.self)])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(try JSONSerialization.jsonObject(with: out) as? [String], cases.map(\.1))
    }

    /// A request line that is not one — bad JSON, an unknown pass — ends the worker with status 2
    /// after saying so (the stream is out of step: callroomd starts another); the end of input
    /// ends it with 0; a recogniser's exception is that request's error.
    func testTheProtocolRefusesWhatItCannotFollow() throws {
        let serve = "import caption_worker\ndef rec(audio, kind, waiting):\n    if len(audio) == 3: raise RuntimeError('no')\n    return f'{kind} {len(audio)}'\nsys.exit(caption_worker.serve('m', rec, 100))"
        func lines(_ d: Data) -> [String] { String(decoding: d, as: UTF8.self).split(separator: "\n").map(String.init) }
        let pcm = Data(count: 4)
        var ok = try python(serve, input: Data("{\"id\":1,\"samples\":2,\"pass\":\"partial\"}\n".utf8) + pcm
                             + Data("{\"id\":2,\"samples\":3,\"pass\":\"final\"}\n".utf8) + Data(count: 6))
        XCTAssertEqual(ok.status, 0)
        let replies = try lines(ok.out).map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertEqual(replies.first?["ready"] as? Bool, true)
        XCTAssertEqual(replies.dropFirst().first?["text"] as? String, "partial 2")
        XCTAssertEqual(replies.last?["error"] as? String, "no")
        for bad in ["not json\n", "{\"id\":1,\"samples\":2,\"pass\":\"sideways\"}\n", "{\"id\":1,\"samples\":101}\n", "[1]\n"] {
            ok = try python(serve, input: Data(bad.utf8) + pcm)
            XCTAssertEqual(ok.status, 2, bad)
            XCTAssertTrue(lines(ok.out).last?.contains("\"error\"") == true, bad)
        }
    }

    /// A partial pass may stop when another request is waiting behind it (the pause's final
    /// pass): its reply says `superseded`, and the request behind it is answered next; a partial
    /// with nothing behind it — the end of input is not a request — is answered.
    func testAPartialGivesWayToTheRequestBehindIt() throws {
        let serve = "import caption_worker\ndef rec(audio, kind, waiting):\n    if kind == 'partial' and waiting(): raise caption_worker.Superseded()\n    return f'{kind} {len(audio)}'\nsys.exit(caption_worker.serve('m', rec, 100))"
        let partial = Data("{\"id\":1,\"samples\":2,\"pass\":\"partial\"}\n".utf8) + Data(count: 4)
        let final = Data("{\"id\":2,\"samples\":3,\"pass\":\"final\"}\n".utf8) + Data(count: 6)
        func replies(_ d: Data) throws -> [[String: Any]] {
            try String(decoding: d, as: UTF8.self).split(separator: "\n").dropFirst()
                .map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        }
        let behind = try replies(try python(serve, input: partial + final).out)
        XCTAssertEqual(behind.map { $0["id"] as? Int }, [1, 2])
        XCTAssertEqual(behind.first?["superseded"] as? Bool, true)
        XCTAssertEqual(behind.first?["text"] as? String, "")
        XCTAssertEqual(behind.last?["text"] as? String, "final 3")
        let alone = try replies(try python(serve, input: partial).out)
        XCTAssertEqual(alone.first?["text"] as? String, "partial 2")
        XCTAssertNil(alone.first?["superseded"])
    }
}

import CallRoomTestSupport
import CallsAudio
@testable import CallsCaptions
import Foundation
import XCTest

/// A recogniser that hears how much audio it was given: "ms N" (N = milliseconds at 16 kHz).
final class CountingRecognizer: SpeechRecognizer, @unchecked Sendable {
    let language = "en-US"
    var samples = 0
    var begun = 0
    func begin() throws(CaptionError) { samples = 0; begun += 1 }
    func feed(_ s: UnsafeBufferPointer<Int16>) throws(CaptionError) { samples += s.count }
    func partial() -> String { samples > 0 ? "ms \(samples / 16)" : "" }
    func end() throws(CaptionError) -> String { "ms \(samples / 16)" }
}

struct CountingEngine: SpeechRecognizerEngine {
    let name = "counting"
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer {
        guard language.lowercased() == "en-us" else { throw .noModel(language: language, available: languages()) }
        return CountingRecognizer()
    }
}

/// Makes counting recognisers, each only once `gate` is signalled (`started` says it began).
final class GatedEngine: SpeechRecognizerEngine, Sendable {
    let name = "gated"
    let started = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer {
        started.signal()
        gate.wait()
        return CountingRecognizer()
    }
}

/// A recogniser that notes what the captioner tells it: pauses, resumptions, ends.
final class HintedRecognizer: SpeechRecognizer, @unchecked Sendable {
    let language = "en-US"
    var said: [String] = []
    func begin() throws(CaptionError) { said.append("begin") }
    func feed(_ s: UnsafeBufferPointer<Int16>) throws(CaptionError) {}
    func partial() -> String { "" }
    func end() throws(CaptionError) -> String { said.append("end"); return "words" }
    func speechPaused() { if said.last != "paused" { said.append("paused") } }
    func speechResumed() { said.append("resumed") }
}

struct HintedEngine: SpeechRecognizerEngine {
    let name = "hinted"
    let recognizer = HintedRecognizer()
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer { recognizer }
}

/// A recogniser whose partial guesses are scripted, one per call.
final class ScriptedRecognizer: SpeechRecognizer, @unchecked Sendable {
    let language = "en-US"
    var guesses: [String]
    init(_ guesses: [String]) { self.guesses = guesses }
    func begin() throws(CaptionError) {}
    func feed(_ s: UnsafeBufferPointer<Int16>) throws(CaptionError) {}
    func partial() -> String { guesses.isEmpty ? "" : guesses.removeFirst() }
    func end() throws(CaptionError) -> String { "the final words" }
}

struct ScriptedEngine: SpeechRecognizerEngine {
    let name = "scripted"
    let recognizer: ScriptedRecognizer
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer { recognizer }
}

/// A recogniser whose `begin` fails while `failing` > 0 (a Whisper worker that cannot start).
final class FailingRecognizer: SpeechRecognizer, @unchecked Sendable {
    let language = "en-US"
    nonisolated(unsafe) static var failing = 0
    func begin() throws(CaptionError) {
        if Self.failing > 0 { Self.failing -= 1; throw .recognizer("cannot start") }
    }
    func feed(_ s: UnsafeBufferPointer<Int16>) throws(CaptionError) {}
    func partial() -> String { "" }
    func end() throws(CaptionError) -> String { "words" }
}

struct FailingEngine: SpeechRecognizerEngine {
    let name = "failing"
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer { FailingRecognizer() }
}

/// The captioner's segmentation, partials and sharing of recognisers, on a virtual clock (time
/// is the frames' own), and PocketSphinx on a bundled clip.
final class CaptionTests: XCTestCase {
    let speech = [Int16](repeating: 0, count: 960).enumerated().map { Int16(8000 * sin(Double($0.offset) * 0.2)) }
    let silence = [Int16](repeating: 0, count: 960)

    /// Feeds `pattern` (true: a voiced 20 ms frame) from `startMs`; returns the time after it.
    @discardableResult
    func play(_ c: SpeakerCaptioner, _ pattern: [Bool], from startMs: Int64 = 0) -> Int64 {
        var t = startMs
        for v in pattern {
            (v ? speech : silence).withUnsafeBufferPointer { c.frame($0, voice: v, atMs: t) }
            t += 20
        }
        return t
    }
    func frames(_ ms: Int, _ voice: Bool) -> [Bool] { [Bool](repeating: voice, count: ms / 20) }

    func testAnUtteranceGetsPartialsThenOneFinalWhenTheSpeakerPauses() throws {
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: CountingEngine(), capacity: 1)) { got.append($0) }
        play(c, frames(1000, false) + frames(2000, true) + frames(1000, false))
        let finals = got.filter(\.isFinal)
        XCTAssertEqual(finals.count, 1, "\(got)")
        let f = try XCTUnwrap(finals.first)
        // It starts 300 ms before the first voiced frame (the pre-roll) and ends with the last.
        XCTAssertEqual(f.startMs, 700)
        XCTAssertEqual(f.endMs, 3000)
        // The recogniser got the pre-roll, the speech and the hangover: 300 + 2000 + 600 ms.
        XCTAssertEqual(Double(f.text.dropFirst(3)) ?? 0, 2900, accuracy: 5)
        let partials = got.filter { !$0.isFinal }
        XCTAssertEqual(partials.count, 5, "a partial every 500 ms while the utterance is open (2 s + 600 ms hangover): \(partials)")
        XCTAssertTrue(partials.allSatisfy { $0.id == f.id && $0.startMs == f.startMs })
        XCTAssertEqual(partials.map(\.endMs), partials.map(\.endMs).sorted())
        XCTAssertFalse(c.isSpeaking)
    }

    /// A recogniser that cannot begin is given back to the pool (not lost to every later
    /// speaker), and the next utterance is captioned.
    func testARecognizerThatCannotBeginGoesBackToThePool() throws {
        var got: [CaptionSegment] = []
        let pool = RecognizerPool(engine: FailingEngine(), capacity: 1)
        let c = try SpeakerCaptioner(language: "en-US", pool: pool) { got.append($0) }
        FailingRecognizer.failing = 1000
        play(c, frames(200, false) + frames(1000, true) + frames(1000, false))
        XCTAssertFalse(c.failures.isEmpty)
        XCTAssertEqual(pool.leased, 0, "given back after failing to begin")
        FailingRecognizer.failing = 0
        c.finish(nowMs: 2200)
        play(c, frames(1000, true) + frames(1000, false), from: 3000)
        XCTAssertEqual(got.filter(\.isFinal).last?.text, "words", "\(got)")
        XCTAssertEqual(pool.leased, 0)
    }

    func testAShortPauseKeepsOneUtteranceALongOneMakesTwo() throws {
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: CountingEngine(), capacity: 1)) { if $0.isFinal { got.append($0) } }
        play(c, frames(1000, true) + frames(400, false) + frames(1000, true) + frames(800, false) + frames(1000, true) + frames(1000, false))
        XCTAssertEqual(got.map(\.id), [1, 2], "400 ms is within the 600 ms hangover, 800 ms is not: \(got)")
        // The second starts with what pre-roll there was after the first ended (200 ms).
        XCTAssertEqual(got.map(\.startMs), [0, 3000])
    }

    func testALongUtteranceIsCutSoCaptionsKeepFlowing() throws {
        var got: [CaptionSegment] = []
        var timing = CaptionTiming()
        timing.maxUtteranceMs = 5000
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: CountingEngine(), capacity: 1), timing: timing) {
            if $0.isFinal { got.append($0) }
        }
        play(c, frames(12_000, true) + frames(1000, false))
        XCTAssertEqual(got.count, 3, "\(got)")
        XCTAssertEqual(got.first?.endMs, 5000)
        XCTAssertEqual(got.map(\.id), [1, 2, 3])
    }

    /// Whisper's timing: the recogniser hears of a pause after 200 ms of silence (its final pass
    /// may start), of voice again after it, and a short utterance ends after 600 ms.
    func testTheRecognizerIsToldOfPausesBeforeTheUtteranceEnds() throws {
        let engine = HintedEngine()
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: engine, capacity: 1), timing: CaptionTiming(for: "whisper")) {
            if $0.isFinal { got.append($0) }
        }
        var t = play(c, frames(1000, true) + frames(180, false))
        XCTAssertEqual(engine.recognizer.said, ["begin"], "180 ms of silence is no pause yet")
        t = play(c, frames(200, false) + frames(500, true), from: t)
        XCTAssertEqual(engine.recognizer.said, ["begin", "paused", "resumed"], "a 380 ms pause: one utterance still")
        t = play(c, frames(300, false), from: t)
        XCTAssertEqual(engine.recognizer.said, ["begin", "paused", "resumed", "paused"], "still open at 300 ms")
        t = play(c, frames(200, false), from: t)
        XCTAssertTrue(got.isEmpty, "a 1.9 s utterance is still open after 500 ms: \(got)")
        play(c, frames(100, false), from: t)
        XCTAssertEqual(engine.recognizer.said, ["begin", "paused", "resumed", "paused", "end"], "ended at 600 ms")
        XCTAssertEqual(got.map(\.endMs), [1880])
        // PocketSphinx's timing tells of no pause.
        XCTAssertNil(CaptionTiming(for: "pocketsphinx").pauseHintMs)
    }

    /// Whisper's timing keeps a short sentence with the next across a 400 ms pause (alone it is
    /// misheard more often) but ends an utterance 5 s long at one: someone who talks on with
    /// short breaths gets final captions as they go, not one per 12 s cut.
    func testALongUtteranceEndsAtAShorterPause() throws {
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: CountingEngine(), capacity: 1), timing: CaptionTiming(for: "whisper")) {
            if $0.isFinal { got.append($0) }
        }
        // 2 s, a 420 ms pause, 3.2 s (5.6 s with the pause), 420 ms, 2 s, silence.
        play(c, frames(2000, true) + frames(420, false) + frames(3200, true) + frames(420, false) + frames(2000, true) + frames(1000, false))
        XCTAssertEqual(got.map(\.id), [1, 2], "\(got)")
        XCTAssertEqual(got.map(\.endMs), [5620, 8040], "the first pause kept, the second (after 5.6 s) ended it")
        // PocketSphinx's timing: 600 ms whatever the length.
        XCTAssertNil(CaptionTiming(for: "pocketsphinx").longUtteranceMs)
        XCTAssertEqual(CaptionTiming(for: "pocketsphinx").hangover(afterSpeakingMs: 20_000), 600)
        XCTAssertEqual(CaptionTiming(for: "whisper").hangover(afterSpeakingMs: 4_980), 600)
        XCTAssertEqual(CaptionTiming(for: "whisper").hangover(afterSpeakingMs: 5_000), 400)
    }

    /// A pool warmed ahead of need holds an idle recogniser the first speaker gets without one
    /// being made; warming a pool whose recognisers are all busy makes none.
    func testAWarmedPoolHasOneReadyForTheFirstSpeaker() throws {
        let pool = RecognizerPool(engine: CountingEngine(), capacity: 1)
        try pool.warm(language: "en-US")
        XCTAssertEqual(pool.leased, 0)
        let first = try XCTUnwrap(try pool.lease(language: "en-US"))
        try pool.warm(language: "en-US")
        XCTAssertNil(try pool.lease(language: "en-US"), "capacity 1: warming made no second one")
        pool.giveBack(first)
        try pool.warm(language: "en-US")
        XCTAssertTrue(try pool.lease(language: "en-US") === first, "the one made ahead, kept warm")
    }

    /// The server stops while a recogniser is being warmed (a Whisper worker starting): the pool
    /// drains meanwhile, and the late one is let go, not kept idle after the drain.
    func testARecognizerWarmedAcrossADrainIsNotKept() throws {
        let engine = GatedEngine()
        let pool = RecognizerPool(engine: engine, capacity: 1)
        let warmed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? pool.warm(language: "en-US")
            warmed.signal()
        }
        XCTAssertEqual(engine.started.wait(timeout: .now() + 5), .success, "the recogniser is being made")
        pool.drain()
        engine.gate.signal()
        XCTAssertEqual(warmed.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(pool.idle, 0, "let go, not kept after the drain")
        XCTAssertEqual(pool.leased, 0)
        // The pool works on: one is made on the next need (capacity 1 was given back).
        engine.gate.signal()
        try pool.warm(language: "en-US")
        XCTAssertEqual(pool.idle, 1)
    }

    /// A guess with fewer than half the words of the caption shown is not shown (the caption
    /// does not shrink to a word and grow back); a longer or similar one is.
    func testAPartialDoesNotCollapseToAWord() throws {
        let engine = ScriptedEngine(recognizer: ScriptedRecognizer(["the trajectory numbers check", "but", "the trajectory numbers",
                                                                    "the trajectory numbers check out", "I ran"]))
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: engine, capacity: 1)) { got.append($0) }
        play(c, frames(3000, true) + frames(1000, false))
        XCTAssertEqual(got.filter { !$0.isFinal }.map(\.text), ["the trajectory numbers check", "the trajectory numbers",
                                                                "the trajectory numbers check out"])
        XCTAssertEqual(got.last?.text, "the final words")
    }

    func testPacketsThatStopEndTheUtteranceOnTheClock() throws {
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: CountingEngine(), capacity: 1)) { if $0.isFinal { got.append($0) } }
        let t = play(c, frames(1000, true))  // then DTX: no packets at all
        c.tick(nowMs: t + 300)
        XCTAssertTrue(got.isEmpty)
        c.tick(nowMs: t + 700)
        XCTAssertEqual(got.count, 1)
        XCTAssertEqual(got.first?.endMs, 1000)
    }

    func testASpeakerWaitsForABusyRecognizerAndLosesNothing() throws {
        let pool = RecognizerPool(engine: CountingEngine(), capacity: 1)
        var a: [CaptionSegment] = [], b: [CaptionSegment] = []
        let ca = try SpeakerCaptioner(language: "en-US", pool: pool) { if $0.isFinal { a.append($0) } }
        let cb = try SpeakerCaptioner(language: "en-US", pool: pool) { if $0.isFinal { b.append($0) } }
        // Both talk at once for 2 s: A holds the only recogniser, B's audio waits.
        var t: Int64 = 0
        for i in 0..<150 {
            let v = i < 100
            (v ? speech : silence).withUnsafeBufferPointer { ca.frame($0, voice: v, atMs: t) }
            (v ? speech : silence).withUnsafeBufferPointer { cb.frame($0, voice: v, atMs: t) }
            t += 20
        }
        // 2000 ms of speech + 600 of hangover each (less the resampler's few samples of delay).
        func ms(_ s: [CaptionSegment]) -> [Int] { s.compactMap { Int($0.text.dropFirst(3)) } }
        XCTAssertEqual(ms(a).count, 1)
        XCTAssertEqual(ms(b).count, 1, "B's utterance, once A gave the recogniser back")
        XCTAssertEqual(Double(ms(a).first ?? 0), 2600, accuracy: 5)
        XCTAssertEqual(Double(ms(b).first ?? 0), 2600, accuracy: 5, "none of B's audio was lost while it waited")
        XCTAssertEqual(pool.leased, 0)
        XCTAssertEqual(ca.dropped + cb.dropped, 0)
    }

    func testAnUtteranceThatEndsWhileEveryRecognizerIsBusyIsCaptionedWhenOneFrees() throws {
        let pool = RecognizerPool(engine: CountingEngine(), capacity: 1)
        let held = try XCTUnwrap(try pool.lease(language: "en-US"))  // another room's speaker, talking on
        var got: [CaptionSegment] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: pool) { got.append($0) }
        let t = play(c, frames(1000, true) + frames(1000, false))
        XCTAssertEqual(got, [], "no recogniser: no partial, and the final waits")
        c.tick(nowMs: t + 500)
        XCTAssertEqual(got, [])
        pool.giveBack(held)
        c.tick(nowMs: t + 1000)
        XCTAssertEqual(got.count, 1, "\(got)")
        XCTAssertEqual(got.first?.isFinal, true)
        XCTAssertEqual(Double(got.first?.text.dropFirst(3) ?? "") ?? 0, 1600, accuracy: 5, "all of it: 1000 ms of speech + the 600 ms hangover")
        XCTAssertEqual(got.first?.endMs, 1000)
        XCTAssertEqual(c.dropped, 0)
        XCTAssertEqual(pool.leased, 0)
    }

    func testALanguageWithNoModelIsAClearError() throws {
        let pool = RecognizerPool(engine: PocketSphinxEngine(), capacity: 1)
        XCTAssertThrowsError(try pool.check(language: "fr-FR")) { e in
            guard case CaptionError.noModel("fr-FR", let available) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(available.contains("en-US") || available.isEmpty)
            XCTAssertTrue("\(e)".contains("fr-FR"))
        }
        let empty = TemporaryDirectory("callroom-models")
        defer { empty.remove() }
        XCTAssertEqual(PocketSphinxEngine(modelRoot: empty.path).languages(), [])
        XCTAssertThrowsError(try PocketSphinxEngine(modelRoot: empty.path).make(language: "en-US"))
    }

    func testPocketSphinxHearsABundledClip() throws {
        let engine = PocketSphinxEngine()
        try XCTSkipUnless(engine.languages().contains("en-US"), "needs pocketsphinx-en-us (scripts/install-deps.sh)")
        let root = BuiltProducts.packageRoot + "/Resources/clips/"
        let table = try String(contentsOfFile: root + "transcripts.tsv", encoding: .utf8)
        let said = try XCTUnwrap(table.split(separator: "\n").first { $0.hasPrefix("claude\t") }?.split(separator: "\t").last.map(String.init))
        let pcm = try SoundFile.readMono48k(path: root + "claude.wav")
        var finals: [String] = []
        let c = try SpeakerCaptioner(language: "en-US", pool: RecognizerPool(engine: engine, capacity: 1)) { if $0.isFinal { finals.append($0.text) } }
        var t: Int64 = 0
        for i in stride(from: 0, to: pcm.count + 48_000, by: 960) {
            let frame = (0..<960).map { i + $0 < pcm.count ? pcm[i + $0] : 0 }
            frame.withUnsafeBufferPointer { c.frame($0, voice: nil, atMs: t) }
            t += 20
        }
        let heard = finals.joined(separator: " ")
        let wer = WordErrorRate.rate(reference: said, hypothesis: heard)
        // Synthetic speech is hard for a model trained on people (docs/benchmarks.md: about 0.8
        // word error rate on these clips), so the bar is that it heard the clip's long words;
        // silence, noise or the wrong sample rate give none of them.
        let long = Set(WordErrorRate.words(said).filter { $0.count >= 5 })
        XCTAssertGreaterThanOrEqual(long.intersection(WordErrorRate.words(heard)).count, 2, "heard \"\(heard)\" for \"\(said)\"")
        XCTAssertLessThan(wer, 0.95, heard)
    }

    func testWordErrorRateCountsEdits() {
        XCTAssertEqual(WordErrorRate.rate(reference: "the cat sat", hypothesis: "the cat sat"), 0)
        XCTAssertEqual(WordErrorRate.errors(reference: "The cat, sat!", hypothesis: "a cat sat down").errors, 2)  // 1 sub + 1 ins
        XCTAssertEqual(WordErrorRate.rate(reference: "one two three four", hypothesis: ""), 1)
    }

    func testTheTranscriptIsWrittenAsItGoesAndSurvivesACrash() throws {
        let dir = TemporaryDirectory("callroom-transcript")
        defer { dir.remove() }
        let w = try TranscriptWriter(dir: dir.path, tid: "tr_1", sessionId: "standup", language: "en-US", engine: "counting", startedAt: 5)
        let ada = TranscriptSegment.Speaker(uid: "ada", pid: "p1", name: "Ada <b>L</b>")
        try w.append(TranscriptSegment(speaker: ada, start: 1.2, end: 3.45, text: "good morning"))
        try w.append(TranscriptSegment(speaker: ada, start: 3661.0, end: 3662.5, text: "an hour --> later"))
        // Written through: the WebVTT file holds both cues before any finish.
        let vtt = try String(contentsOfFile: w.vttPath, encoding: .utf8)
        XCTAssertEqual(vtt, """
            WEBVTT - standup

            1
            00:00:01.200 --> 00:00:03.450
            <v Ada ‹b›L‹/b›>good morning

            2
            01:01:01.000 --> 01:01:02.500
            <v Ada ‹b›L‹/b›>an hour --› later

            """ + "\n")
        // A crash (no finish) that tore a last line: finalise keeps every whole one.
        let lines = dir.file("tr_1.jsonl")
        let h = try XCTUnwrap(FileHandle(forWritingAtPath: lines))
        h.seekToEndOfFile()
        h.write(Data(#"{"speaker":{"uid":"ada","#.utf8))
        try h.close()
        let doc = try TranscriptWriter.finalise(linesPath: lines)
        XCTAssertEqual(doc.segments.map(\.text), ["good morning", "an hour --> later"])
        XCTAssertEqual(doc.startedAt, 5)
        let json = try JSONDecoder().decode(TranscriptDocument.self, from: Data(contentsOf: URL(fileURLWithPath: w.jsonPath)))
        XCTAssertEqual(json, doc)
        let mode = try FileManager.default.attributesOfItem(atPath: w.vttPath)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
    }
}

import CallRoomTestSupport
import CallsAudio
import CallsCaptions
import CallsCore
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import Synchronization
import XCTest

/// The server's transcription end to end: a moderator speaks a bundled clip (its text is
/// known), starts transcription from the SDK, everyone gets partial and final captions of what
/// was said with the speaker's name, and the transcript is stored as WebVTT and JSON and served
/// (call log, `/transcriptions`, `TranscriptsRequest`) to the call's participants only.
final class TranscriptionTests: XCTestCase {
    static let clip = "kat"

    func reference() throws -> String {
        let table = try String(contentsOfFile: BuiltProducts.packageRoot + "/Resources/clips/transcripts.tsv", encoding: .utf8)
        return try XCTUnwrap(table.split(separator: "\n").first { $0.hasPrefix(Self.clip + "\t") }?.split(separator: "\t").last.map(String.init))
    }

    /// Session `session`'s transcripts (`/transcriptions`, as the operator) once the first has
    /// ended — written by the transcriber —, within `seconds`; empty when it has not by then.
    func finishedTranscripts(_ t: ServerHarness, session: String, within seconds: Double) async -> [[String: Any]] {
        var list: [[String: Any]] = []
        let ended = await eventually(seconds, poll: 0.1) {
            list = BlockingHTTP.request("GET", t.server.url + "/v3/calls/\(session)/transcriptions",
                                        headers: ["apikey": t.server.keys.apiKey]).json["data"] as? [[String: Any]] ?? []
            return ((list.first?["endTime"] as? NSNumber)?.int64Value ?? 0) > 0
        }
        return ended ? list : []
    }

    func testCaptionsReachTheRoomAndTheTranscriptIsStored() async throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"),
                          "needs pocketsphinx-en-us (scripts/install-deps.sh)")
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "cc", settings: SessionSettingsBuilder()
            .setAudioInput("file:" + BuiltProducts.packageRoot + "/Resources/clips/\(Self.clip).wav").setAudioOutput("null").build(),
                                           name: "Katherine", onEvent: { modEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "cc", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        guest.setSessionFeature(.transcription, enabled: true)
        try await waitFor("a participant may not transcribe", guestEvents) { if case .error("ERR_NOT_MODERATOR", _) = $0 { return true }; return false }
        mod.setSessionFeature(.transcription, enabled: true, language: "fr-FR")
        try await waitFor("a language with no model", modEvents) {
            if case .error("ERR_LANGUAGE_UNAVAILABLE", let m) = $0 { return m.contains("fr-FR") && m.contains("en-US") }; return false
        }
        XCTAssertFalse(guest.isServerTranscribing)
        mod.setSessionFeature(.transcription, enabled: true)  // the session's caption language: en-US
        try await waitFor("onTranscriptionStarted (guest)", guestEvents) { $0 == .transcriptionStarted(language: "en-US") }
        XCTAssertTrue(guest.isServerTranscribing)
        XCTAssertEqual(guest.participants.count, 2, "the transcriber is no participant")
        mod.setSessionFeature(.transcription, enabled: true)
        try await waitFor("one transcription at a time", modEvents) { if case .error("ERR_ALREADY_TRANSCRIBING", _) = $0 { return true }; return false }

        // The clip loops: within two of its turns the guest has final captions of it.
        let modPID = try XCTUnwrap(mod.localParticipantID)
        func captions() -> [Caption] { guestEvents.all.compactMap { if case .captionReceived(let c) = $0 { return c }; return nil } }
        // (On a loaded machine Whisper falls behind the clip: a partial is skipped while the
        // worker is busy — an utterance may end with no partial before its final — and finals
        // come late. The wait is for what is asked, not for a fixed count of turns.)
        func aFinalHadPartials() -> Bool {
            let all = captions()
            return all.contains { f in f.final && !f.text.isEmpty && all.contains { !$0.final && $0.id == f.id } }
        }
        await eventually(45) { captions().filter({ $0.final && !$0.text.isEmpty }).count >= 2 && aFinalHadPartials() }
        let finals = captions().filter { $0.final && !$0.text.isEmpty }
        XCTAssertGreaterThanOrEqual(finals.count, 1, "final captions: \(captions())")
        let c = try XCTUnwrap(finals.first)
        XCTAssertEqual(c.pid, modPID)
        XCTAssertEqual(c.uid, "mod")
        XCTAssertEqual(c.name, "Katherine")
        XCTAssertGreaterThan(c.end, c.start)
        XCTAssertTrue(aFinalHadPartials(), "partials before a final: \(captions())")
        // What was recognised is what was said (PocketSphinx on synthetic speech is no stenographer:
        // docs/benchmarks.md has its word error rate; here, a good share of the clip's words).
        let said = Set(WordErrorRate.words(try reference()))
        let heard = Set(finals.flatMap { WordErrorRate.words($0.text) })
        // (Moonshine and Whisper, where installed, hear most of them: docs/benchmarks.md. 8 of
        // the clip's 17 words: Moonshine's first words on this clip vary with the audio's last
        // milliseconds; CI heard 8 once — "But reject a renumber's checkout. I ran mem twice I
        // can, and the results agreed to the last period.")
        XCTAssertGreaterThanOrEqual(said.intersection(heard).count, t.server.captionEngine == "pocketsphinx" ? 4 : 8,
                                    "\(t.server.captionEngine) heard \(finals.map(\.text)) for \(said)")
        XCTAssertTrue(modEvents.all.contains { if case .captionReceived(let x) = $0 { return x.pid == modPID }; return false }, "the speaker sees their own captions")

        mod.setSessionFeature(.transcription, enabled: false)
        try await waitFor("onTranscriptionStopped", guestEvents) { $0 == .transcriptionStopped }
        XCTAssertFalse(guest.isServerTranscribing)

        // The call log and /transcriptions list it once the transcriber has written it.
        let admin = ["apikey": t.server.keys.apiKey]
        let list = await finishedTranscripts(t, session: "cc", within: 15)
        let tr = try XCTUnwrap(list.first, "\(list)")
        let tid = try XCTUnwrap(tr["tid"] as? String)
        let url = try XCTUnwrap(tr["url"] as? String)
        XCTAssertTrue(url.hasSuffix("/v3/calls/cc/transcriptions/\(tid)"), url)
        let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/cc", headers: admin).data
        XCTAssertEqual(call["hasTranscription"] as? Bool, true)
        XCTAssertEqual((call["transcriptions"] as? [[String: Any]])?.first?["tid"] as? String, tid)
        let filtered = BlockingHTTP.request("GET", t.server.url + "/v3/calls?hasTranscription=true", headers: admin).json["data"] as? [[String: Any]]
        XCTAssertEqual(filtered?.compactMap { $0["sessionId"] as? String }, ["cc"])
        XCTAssertEqual((BlockingHTTP.request("GET", t.server.url + "/v3/calls?hasTranscription=false", headers: admin).json["data"] as? [Any])?.count, 0)

        // JSON (speaker, start, end, text) and WebVTT, to a participant of the call.
        let login = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                         body: #"{"uid":"guest","authKey":"\#(t.authKey)"}"#)
        let token = try XCTUnwrap(login.data["authToken"] as? String)
        let json = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId])
        XCTAssertEqual(json.status, 200)
        let doc = try JSONDecoder().decode(TranscriptDocument.self, from: json.body)
        XCTAssertEqual(doc.tid, tid)
        XCTAssertEqual(doc.language, "en-US")
        XCTAssertEqual(doc.engine, t.server.captionEngine)
        let first = try XCTUnwrap(doc.segments.first)
        XCTAssertEqual(first.speaker, .init(uid: "mod", pid: modPID, name: "Katherine"))
        XCTAssertLessThan(first.start, first.end)
        XCTAssertEqual(Array(doc.segments.map(\.text).prefix(finals.count)), Array(finals.map(\.text).prefix(doc.segments.count)), "the transcript holds the final captions")
        let vtt = BlockingHTTP.request("GET", url + ".vtt", headers: ["authToken": token, "appId": t.appId])
        XCTAssertEqual(vtt.status, 200)
        XCTAssertEqual(vtt.headers["content-type"], "text/vtt; charset=utf-8")
        let text = String(decoding: vtt.body, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("WEBVTT"), text)
        XCTAssertTrue(text.contains(" --> ") && text.contains("<v Katherine>" + first.text), text)
        // The SDK's TranscriptsRequest reads the same list.
        let stranger = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                            body: #"{"uid":"stranger","authKey":"\#(t.authKey)"}"#)
        let st = try XCTUnwrap(stranger.data["authToken"] as? String)
        XCTAssertEqual(BlockingHTTP.request("GET", url, headers: ["authToken": st, "appId": t.appId]).status, 404, "not a participant")
        XCTAssertEqual(BlockingHTTP.request("GET", url + "x.vtt", headers: admin).status, 404)
        await guest.leave()
        await mod.leave()
    }

    /// `captionsEngine: whisper` (the default prefers Moonshine where both are installed): the
    /// server's captions come from Whisper's workers, hear the clip's words, and the transcript
    /// names the engine.
    func testACaptionsEngineChosenByNameCaptionsTheRoom() async throws {
        try XCTSkipUnless(WhisperEngine().isInstalled, "the Whisper engine is not installed (scripts/install-deps.sh)")
        let t = try TestServer.forSDK { $0.captionsEngine = .whisper }
        defer { t.stop() }
        XCTAssertEqual(t.server.captionEngine, "whisper")
        let guestEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "ms", settings: SessionSettingsBuilder()
            .setAudioInput("file:" + BuiltProducts.packageRoot + "/Resources/clips/\(Self.clip).wav").setAudioOutput("null").build(), name: "Katherine")
        let guest = try await t.joinedClient("guest", session: "ms", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        mod.setSessionFeature(.transcription, enabled: true)
        func finals() -> [Caption] { guestEvents.all.compactMap { if case .captionReceived(let c) = $0, c.final, !c.text.isEmpty { return c }; return nil } }
        // (Whisper tiny.en's first words on this clip move with the CPU — "The trajectory
        // numbers", "The trick is to remember", or a first sentence heard as nothing when the
        // clip's turn splits it off: benchmarks.md, "Captions" — so the words are counted over
        // the clip's turns, until it has heard 9 of the 17 or 45 s.)
        let said = Set(WordErrorRate.words(try reference()))
        func heard() -> Set<String> { Set(finals().flatMap { WordErrorRate.words($0.text) }) }
        await eventually(45) { said.intersection(heard()).count >= 9 }
        XCTAssertGreaterThanOrEqual(said.intersection(heard()).count, 9, "whisper heard \(finals().map(\.text)) for \(said)")
        mod.setSessionFeature(.transcription, enabled: false)
        let stoppedAt = Date()
        let url = await finishedTranscripts(t, session: "ms", within: 10).first?["url"] as? String
        // (Once in a CI run of 2026-12-07 the end was not listed in 10 s: whether the room heard
        // the stop, and what the list said, tell the server's signalling from the transcriber.)
        let heardStop = guestEvents.all.contains { $0 == .transcriptionStopped }
        let listed = BlockingHTTP.request("GET", t.server.url + "/v3/calls/ms/transcriptions", headers: ["apikey": t.server.keys.apiKey]).text
        let doc = try JSONDecoder().decode(TranscriptDocument.self, from: BlockingHTTP.request("GET", try XCTUnwrap(url, "no transcript end \(Date().timeIntervalSince(stoppedAt)) s after the stop; the guest heard it stop: \(heardStop); listed: \(listed)"), headers: ["apikey": t.server.keys.apiKey]).body)
        XCTAssertEqual(doc.engine, "whisper")
        await guest.leave()
        await mod.leave()
    }

    /// One speaker's slow final pass holds back no one else's caption: each speaker is captioned
    /// on a queue of their own. Two speakers say the same two seconds (then three of silence);
    /// every final pass waits at a gate the test opens once both are waiting there — passes one
    /// after another would never have two in progress — and 10 s of audio more: what waits on a
    /// speaker's lane is bounded (their frames dropped past it, said when it starts and when the
    /// lane has room again).
    func testOneSpeakersSlowFinalPassHoldsBackNoOneElsesCaption() async throws {
        let tmp = TemporaryDirectory("callroom-slow-final")
        defer { tmp.remove() }
        let speech = try SoundFile.readMono48k(path: BuiltProducts.packageRoot + "/Resources/clips/grace.wav").prefix(96_000)
        let wav = tmp.path + "/speech.wav"
        let out = try FileOutput(path: wav, frameSamples: 960, paced: false)
        try (Array(speech) + [Int16](repeating: 0, count: 144_000)).withUnsafeBufferPointer { try out.write($0) }
        out.close()
        let gate = FinalPassGate()
        defer { gate.open() }
        let logged = EventRecorder<String>()
        let t = try TestServer.forSDK {
            $0.captionEngineOverride = GatedFinalEngine(gate: gate)
            $0.captionDecoders = 2
            $0.logLevel = .info
            $0.logSink = { logged.add($0) }
        }
        defer { t.stop() }
        let events = EventRecorder<CallEvent>()
        let settings = SessionSettingsBuilder().setAudioInput("file:" + wav).setAudioOutput("null").build()
        let a = try await t.joinedClient("a", session: "gate", settings: settings, onEvent: { events.add($0) })
        let b = try await t.joinedClient("b", session: "gate", settings: settings)
        a.setSessionFeature(.transcription, enabled: true)
        let both = await eventually(20) { gate.waiting.load(ordering: .acquiring) == 2 }
        XCTAssertTrue(both, "one speaker's final pass waited for the other's (in progress: \(gate.waiting.load(ordering: .acquiring)))")
        let behind = await eventually(20) { logged.all.filter { $0.contains("captions fell 10 s behind") }.count == 2 }
        XCTAssertTrue(behind, "no lane said it dropped audio: \(logged.all)")
        gate.open()
        let pids = Set([a.localParticipantID, b.localParticipantID].compactMap { $0 })
        let finals = await eventually(10) {
            Set(events.all.compactMap { if case .captionReceived(let c) = $0, c.final, c.text == "heard at last" { return c.pid }; return nil }) == pids
        }
        XCTAssertTrue(finals, "both speakers' finals once the gate opened: \(events.all.map(\.callback))")
        let caughtUp = await eventually(10) { logged.all.filter { $0.contains("captions caught up with a speaker") && $0.contains("failed_operations=") }.count == 2 }
        XCTAssertTrue(caughtUp, "the lanes did not say they caught up: \(logged.all.filter { $0.contains("captions") })")
        await b.leave()
        await a.leave()
    }

    /// The whole data directory full while a transcription runs: its end — the JSON document and
    /// the row that says where it is — is written once there is room (tried every 5 s), with the
    /// captions it had; until then the transcript is not listed as ended.
    func testATranscriptEndTheDiskRefusedIsWrittenOnceThereIsRoom() async throws {
        let disk = try SmallDisk(size: "4m")
        defer { disk.remove() }
        let data = disk.path
        let t = try TestServer.forSDK { $0.dataDir = data }
        defer { t.stop() }
        let guestEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "trfull", settings: SessionSettingsBuilder()
            .setAudioInput("file:" + BuiltProducts.packageRoot + "/Resources/clips/\(Self.clip).wav").setAudioOutput("null").build(), name: "Katherine")
        let guest = try await t.joinedClient("guest", session: "trfull", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        mod.setSessionFeature(.transcription, enabled: true)
        func finals() -> [Caption] { guestEvents.all.compactMap { if case .captionReceived(let c) = $0, c.final, !c.text.isEmpty { return c }; return nil } }
        await eventually(30) { !finals().isEmpty }
        XCTAssertFalse(finals().isEmpty, "a caption before the disk fills")
        try disk.fill()
        mod.setSessionFeature(.transcription, enabled: false)
        await eventually(10) { guestEvents.all.contains(.transcriptionStopped) }
        // The transcriber has closed its files — it is finishing on the full disk — before room is made.
        await eventually(10) { !openFilePaths().contains { $0.hasPrefix(data + "/transcripts/") } }
        XCTAssertFalse(openFilePaths().contains { $0.hasPrefix(data + "/transcripts/") }, "the transcriber let go of its files")
        let admin = ["apikey": t.server.keys.apiKey]
        func listed() -> [String: Any]? {
            (BlockingHTTP.request("GET", t.server.url + "/v3/calls/trfull/transcriptions", headers: admin).json["data"] as? [[String: Any]])?.first
        }
        XCTAssertEqual((listed()?["endTime"] as? NSNumber)?.int64Value ?? 0, 0, "not ended while nothing could be written: \(listed() ?? [:])")
        try disk.makeRoom()
        let ended = await eventuallyValue(15, poll: 0.2) { () -> [String: Any]? in
            guard let l = listed(), ((l["endTime"] as? NSNumber)?.int64Value ?? 0) > 0 else { return nil }
            return l
        }
        let url = try XCTUnwrap(ended?["url"] as? String, "the transcript ends once there is room")
        let doc = try JSONDecoder().decode(TranscriptDocument.self, from: BlockingHTTP.request("GET", url, headers: admin).body)
        XCTAssertGreaterThanOrEqual(doc.segments.count, 1, "the captions it had")
        await guest.leave()
        await mod.leave()
    }

}

/// Where the final passes of `GatedFinalEngine`'s recognisers wait until the test opens it.
final class FinalPassGate: Sendable {
    /// Final passes waiting now.
    let waiting = Atomic<Int>(0)
    private let opened = Atomic<Bool>(false)
    private let semaphore = DispatchSemaphore(value: 0)
    func pass() {
        guard !opened.load(ordering: .acquiring) else { return }
        waiting.add(1, ordering: .acquiringAndReleasing)
        _ = semaphore.wait(timeout: .now() + 30)
        waiting.subtract(1, ordering: .acquiringAndReleasing)
    }
    /// Every pass waiting goes on, and later ones do not wait.
    func open() {
        guard !opened.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for _ in 0..<16 { semaphore.signal() }
    }
}

/// Recognisers whose final pass waits at `gate` (a worker on a busy machine, for as long as the
/// test says); a new one each time the pool makes one.
struct GatedFinalEngine: SpeechRecognizerEngine {
    let name = "gated"
    let gate: FinalPassGate
    func languages() -> [String] { ["en-US"] }
    func make(language: String) throws(CaptionError) -> SpeechRecognizer { GatedFinalRecognizer(gate: gate) }
}

final class GatedFinalRecognizer: SpeechRecognizer, Sendable {
    let language = "en-US"
    let gate: FinalPassGate
    init(gate: FinalPassGate) { self.gate = gate }
    func begin() throws(CaptionError) {}
    func feed(_ s: UnsafeBufferPointer<Int16>) throws(CaptionError) {}
    func partial() -> String { "" }
    func end() throws(CaptionError) -> String {
        gate.pass()
        return "heard at last"
    }
}

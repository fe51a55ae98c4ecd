import CallroomKit
import CallsAudio
import CallsCaptions
import CallsCore
import Foundation

/// `callroom bench captions`: each caption engine side by side on speech whose text is known —
/// the bundled clips (espeak-ng voices, `clips/transcripts.tsv`) and read human speech (the
/// LibriVox utterances of Debian's pocketsphinx-testdata) — through what a call does to them:
/// Opus as a session sends speech (20 ms frames, the voice profile's bitrate — 48 kb/s — and
/// encoder settings unless `--bitrate` says otherwise), decoded, and captioned by the server's
/// `SpeakerCaptioner` (SpeexDSP to 16 kHz, the engine), the voice flag from the frame's level
/// (as clients set RFC 6464's).
///
/// PocketSphinx runs on the clip's own clock (virtual: it recognises inside each call). Whisper
/// runs in its worker process, so frames are paced in real time (20 ms apart) and the figures
/// are what a call sees: word error rate; real-time factor (recognition CPU — the worker's
/// too — ÷ audio length); the final caption's delay after the end of speech (median, wall
/// clock); the partial captions' interval while someone talks (median); memory per recogniser.
enum CaptionBench {
    struct Utterance {
        let name: String
        let path: String
        let text: String
    }

    struct Figures {
        var errors = 0, words = 0
        var cpuSeconds = 0.0, audioSeconds = 0.0
        var finalDelaysMs: [Double] = []
        var partialGapsMs: [Double] = []
        var residentKiB = 0
    }

    /// Timing asked for on the command line instead of the engine's (`CaptionTiming(for:)`);
    /// nil: the engine's, 0 for the optional ones: none.
    struct TimingOverrides {
        var pauseHintMs: Int?
        var hangoverMs: Int?
        var longUtteranceMs: Int?
        var maxUtteranceMs: Int?

        func applied(to engineTiming: CaptionTiming) -> CaptionTiming {
            var timing = engineTiming
            if let ms = pauseHintMs { timing.pauseHintMs = ms > 0 ? Int64(ms) : nil }
            if let ms = hangoverMs { timing.hangoverMs = Int64(ms) }
            if let ms = longUtteranceMs { timing.longUtteranceMs = ms > 0 ? Int64(ms) : nil }
            if let ms = maxUtteranceMs { timing.maxUtteranceMs = Int64(ms) }
            return timing
        }
    }

    static func run(language: String, modelRoot: String?, engines: [String], whisperPython: String?, whisperModelDir: String?, moonshinePython: String?, moonshineModelDir: String?, librivox: String, bitrate: Int, overrides: TimingOverrides, workerThreads: Int) {
        guard let resources = BotDirector.resources,
              let table = try? String(contentsOf: resources.appendingPathComponent("clips/transcripts.tsv"), encoding: .utf8) else {
            Console.fail("cannot find clips/transcripts.tsv (set CALLROOM_RESOURCES)", code: ExitCode.failure)
        }
        let clips = table.split(separator: "\n").compactMap { line -> Utterance? in
            let cols = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard cols.count == 2 else { return nil }
            return Utterance(name: cols[0], path: resources.appendingPathComponent("clips/\(cols[0]).wav").path, text: cols[1])
        }
        let corpora: [(String, [Utterance])] = [("clips", clips), ("librivox", Self.librivox(librivox))].filter { !$0.1.isEmpty }
        if corpora.count < 2 { Console.out("(no LibriVox utterances at \(librivox): install pocketsphinx-testdata)") }
        for name in engines {
            let engine: SpeechRecognizerEngine
            switch name {
            case "pocketsphinx": engine = PocketSphinxEngine(modelRoot: modelRoot ?? PocketSphinxEngine.defaultModelRoot)
            case "whisper":
                let w = WhisperEngine(python: whisperPython ?? WhisperEngine.defaultPython, modelDir: whisperModelDir, threads: workerThreads)
                if let why = w.unavailability() {
                    Console.out("whisper: not available (\(why))")
                    continue
                }
                engine = w
            case "moonshine":
                let m = MoonshineEngine(python: moonshinePython ?? MoonshineEngine.defaultPython,
                                        modelDir: moonshineModelDir ?? MoonshineEngine.defaultModelDir, threads: workerThreads)
                if let why = m.unavailability() {
                    Console.out("moonshine: not available (\(why))")
                    continue
                }
                engine = m
            default: Console.fail("--engine is pocketsphinx, whisper or moonshine", code: ExitCode.usage)
            }
            let pool = RecognizerPool(engine: engine, capacity: 1)
            do { try pool.check(language: language) } catch { Console.fail("\(error)", code: ExitCode.failure) }
            let loadStart = Date()
            let rssBefore = ProcessUsage.residentKiB(getpid()) ?? 0
            do { if let r = try pool.lease(language: language) { pool.giveBack(r) } } catch { Console.fail("\(error)", code: ExitCode.failure) }
            let loaded = Date().timeIntervalSince(loadStart)
            let inProcessKiB = (ProcessUsage.residentKiB(getpid()) ?? 0) - rssBefore
            Console.out(String(format: "%@: model load %.2f s (%@, Opus at %d b/s)", engine.name, loaded, language, bitrate))
            let timing = overrides.applied(to: CaptionTiming(for: engine.name))
            for (corpus, utterances) in corpora {
                var f = Figures()
                for u in utterances { caption(u, pool: pool, language: language, bitrate: bitrate, timing: timing, realTime: CaptionTiming.workerEngines.contains(engine.name), into: &f) }
                if f.residentKiB == 0 { f.residentKiB = inProcessKiB }
                let rtf = f.cpuSeconds / max(0.001, f.audioSeconds)
                Console.out(String(format: "captions engine=%@ corpus=%@ wer=%.3f words=%d rtf=%.3f final_after_speech_ms=%.0f partial_every_ms=%.0f memory_mib=%.0f speakers_on_two_cores=%.1f",
                                   engine.name, corpus, Double(f.errors) / Double(max(1, f.words)), f.words, rtf, median(f.finalDelaysMs),
                                   median(f.partialGapsMs), Double(f.residentKiB) / 1024, 2 / max(0.001, rtf)))
            }
        }
    }

    /// Debian's pocketsphinx-testdata: `fileids` and `transcription` (`<s> text </s> (id)`).
    static func librivox(_ dir: String) -> [Utterance] {
        guard let ids = try? String(contentsOfFile: dir + "/fileids", encoding: .utf8),
              let lines = try? String(contentsOfFile: dir + "/transcription", encoding: .utf8) else { return [] }
        var texts: [String: String] = [:]
        for line in lines.split(separator: "\n") {
            guard let open = line.lastIndex(of: "("), let close = line.lastIndex(of: ")") else { continue }
            let text = line[..<open].replacingOccurrences(of: "<s>", with: "").replacingOccurrences(of: "</s>", with: "")
            texts[String(line[line.index(after: open)..<close])] = text.trimmingCharacters(in: .whitespaces)
        }
        return ids.split(separator: "\n").map(String.init).compactMap { id in
            texts[id].map { Utterance(name: String(id.suffix(4)), path: dir + "/\(id).wav", text: $0) }
        }
    }

    private static func caption(_ u: Utterance, pool: RecognizerPool, language: String, bitrate: Int, timing: CaptionTiming, realTime: Bool, into f: inout Figures) {
        guard let pcm = try? SoundFile.readMono48k(path: u.path),
              let enc = try? OpusEncoder(frameMs: 20, bitrate: Int32(bitrate)), let dec = try? OpusDecoder() else {
            Console.fail("cannot read \(u.path)", code: ExitCode.failure)
        }
        var finals: [CaptionSegment] = []
        var partialTimes: [Double] = []
        var t: Int64 = 0, lastVoice: Int64 = 0, finalAt: Int64 = 0
        var lastVoiceWall = 0.0, finalWall = 0.0, finalCallMs = 0.0
        let captioner: SpeakerCaptioner
        do {
            captioner = try SpeakerCaptioner(language: language, pool: pool, timing: timing) { c in
                if ProcessInfo.processInfo.environment["CALLROOM_BENCH_DEBUG"] != nil { Console.out("    \(c.isFinal ? "final" : "partial") #\(c.id) \(c.startMs)-\(c.endMs): \(c.text)") }
                if c.isFinal { finals.append(c); finalAt = t + 20; finalWall = Date().timeIntervalSince1970 } else { partialTimes.append(Date().timeIntervalSince1970) }
            }
        } catch { Console.fail("\(error)", code: ExitCode.failure) }
        var packet = [UInt8](repeating: 0, count: 1500), out = [Int16](repeating: 0, count: 960)
        var frame = [Int16](repeating: 0, count: 960)
        // A second of silence before the speech, as in a call (the speaker's stream runs before
        // they talk: the encoder is warm and the captioner has its pre-roll; the clips start
        // speaking at their first sample), and 1.5 s after it, which ends the last utterance.
        let leadIn = 50
        let frames = leadIn + pcm.count / 960 + 75
        let workerBefore = workerCPU(pool)
        var threadNs: UInt64 = 0
        let start = Date().timeIntervalSince1970
        for i in 0..<frames {
            if realTime {
                let due = start + Double(i) * 0.020
                let now = Date().timeIntervalSince1970
                if due > now { usleep(UInt32((due - now) * 1e6)) }
            }
            for k in 0..<960 {
                let j = (i - leadIn) * 960 + k
                frame[k] = j >= 0 && j < pcm.count ? pcm[j] : 0
            }
            let voice = frame.withUnsafeBufferPointer { LevelMeter.isVoice(dbfs: LevelMeter.rmsDBFS($0)) }
            if voice { lastVoice = t + 20; lastVoiceWall = max(Date().timeIntervalSince1970, start + Double(i + 1) * 0.020) }
            let n = (try? frame.withUnsafeBufferPointer { f in try packet.withUnsafeMutableBufferPointer { try enc.encode(f, into: $0) } }) ?? 0
            _ = packet.withUnsafeBufferPointer { p in out.withUnsafeMutableBufferPointer { dec.decode(UnsafeBufferPointer(rebasing: p[0..<n]), into: $0) } }
            let before = CPUBench.threadCPU(), had = finals.count, wallBefore = Date().timeIntervalSince1970
            out.withUnsafeBufferPointer { captioner.frame($0, voice: voice, atMs: t) }
            threadNs += CPUBench.threadCPU() - before
            if finals.count > had { finalCallMs = (Date().timeIntervalSince1970 - wallBefore) * 1000 }
            t += 20
        }
        captioner.finish(nowMs: t)
        for failure in captioner.failures { Console.out("  (\(u.name): recogniser failed: \(failure))") }
        let worker = workerCPU(pool)
        f.cpuSeconds += Double(threadNs) / 1e9 + (worker.cpu - workerBefore.cpu)
        f.residentKiB = max(f.residentKiB, worker.kib)
        f.audioSeconds += Double(pcm.count) / 48_000
        if let last = finals.last {
            f.finalDelaysMs.append(realTime ? (finalWall - lastVoiceWall) * 1000 : Double(finalAt - max(lastVoice, last.endMs)) + finalCallMs)
        }
        f.partialGapsMs += zip(partialTimes.dropFirst(), partialTimes).map { ($0 - $1) * 1000 }
        let hypothesis = finals.map(\.text).joined(separator: " ")
        let e = WordErrorRate.errors(reference: u.text, hypothesis: hypothesis)
        f.errors += e.errors
        f.words += e.words
        Console.out(String(format: "  %-7@ wer %5.1f %%  %@", u.name, 100 * Double(e.errors) / Double(max(1, e.words)), hypothesis))
    }

    /// The pool's idle recogniser's worker CPU and memory (zero in process).
    private static func workerCPU(_ pool: RecognizerPool) -> (cpu: Double, kib: Int) {
        guard let r = try? pool.lease(language: "en-US") else { return (0, 0) }
        defer { pool.giveBack(r) }
        return r.workerUsage.map { ($0.cpuSeconds, $0.residentKiB) } ?? (0, 0)
    }

    private static func median(_ xs: [Double]) -> Double { xs.isEmpty ? .nan : xs.sorted()[xs.count / 2] }
}

import CallroomKit
import CallsAudio
import CallsCaptions
import Foundation

/// `callroom bench captions`: the captions' word error rate and cost on the bundled speech clips
/// (their text is in `clips/transcripts.tsv`), through what a call does to them: each clip is
/// encoded with Opus (32 kb/s, 20 ms, as clients send), decoded, and captioned by the server's
/// `SpeakerCaptioner` (SpeexDSP to 16 kHz, PocketSphinx), with the sender's voice flag from the
/// frame's level (as clients set RFC 6464's). Time is virtual (the clip's own), so the figures
/// are the recogniser's: word error rate, real-time factor (recognition CPU ÷ audio length),
/// and how long after the end of speech the final caption is out (the silence hangover plus the
/// decoding of the utterance's end, measured).
enum CaptionBench {
    static func run(language: String, modelRoot: String?) {
        guard let resources = BotDirector.resources,
              let table = try? String(contentsOf: resources.appendingPathComponent("clips/transcripts.tsv"), encoding: .utf8) else {
            Console.fail("cannot find clips/transcripts.tsv (set CALLROOM_RESOURCES)", code: ExitCode.failure)
        }
        let engine = PocketSphinxEngine(modelRoot: modelRoot ?? PocketSphinxEngine.defaultModelRoot)
        let pool = RecognizerPool(engine: engine, capacity: 1)
        do { try pool.check(language: language) } catch { Console.fail("\(error)", code: ExitCode.failure) }
        let loadStart = Date()
        do { if let r = try pool.lease(language: language) { pool.giveBack(r) } } catch { Console.fail("\(error)", code: ExitCode.failure) }
        Console.out(String(format: "model load: %.2f s (%@, %@)", Date().timeIntervalSince(loadStart), engine.name, language))
        let timing = CaptionTiming()
        var errors = 0, words = 0, cpuNs: UInt64 = 0, audioMs: Int64 = 0
        var finalDelays: [Double] = []
        for line in table.split(separator: "\n") {
            let cols = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard cols.count == 2 else { continue }
            let path = resources.appendingPathComponent("clips/\(cols[0]).wav").path
            guard let pcm = try? SoundFile.readMono48k(path: path),
                  let enc = try? OpusEncoder(frameMs: 20, bitrate: 32_000), let dec = try? OpusDecoder() else {
                Console.fail("cannot read \(path)", code: ExitCode.failure)
            }
            var finals: [CaptionSegment] = []
            var t: Int64 = 0, lastVoice: Int64 = 0, finalAt: Int64 = 0
            var lastFinalCPU: UInt64 = 0
            let captioner: SpeakerCaptioner
            do { captioner = try SpeakerCaptioner(language: language, pool: pool, timing: timing) { if $0.isFinal { finals.append($0); finalAt = t + 20 } } } catch {
                Console.fail("\(error)", code: ExitCode.failure)
            }
            var packet = [UInt8](repeating: 0, count: 1500), out = [Int16](repeating: 0, count: 960)
            var frame = [Int16](repeating: 0, count: 960)
            let frames = pcm.count / 960 + 50  // one more second of silence ends the last utterance
            for i in 0..<frames {
                for k in 0..<960 { frame[k] = i * 960 + k < pcm.count ? pcm[i * 960 + k] : 0 }
                let voice = frame.withUnsafeBufferPointer { LevelMeter.isVoice(dbfs: LevelMeter.rmsDBFS($0)) }
                if voice { lastVoice = t + 20 }
                let n = (try? frame.withUnsafeBufferPointer { f in try packet.withUnsafeMutableBufferPointer { try enc.encode(f, into: $0) } }) ?? 0
                _ = packet.withUnsafeBufferPointer { p in out.withUnsafeMutableBufferPointer { dec.decode(UnsafeBufferPointer(rebasing: p[0..<n]), into: $0) } }
                let before = CPUBench.threadCPU(), had = finals.count
                out.withUnsafeBufferPointer { captioner.frame($0, voice: voice, atMs: t) }
                let spent = CPUBench.threadCPU() - before
                cpuNs += spent
                if finals.count > had { lastFinalCPU = spent }
                t += 20
            }
            captioner.finish(nowMs: t)
            audioMs += Int64(pcm.count / 48)
            if let last = finals.last { finalDelays.append(Double(finalAt - max(lastVoice, last.endMs)) + Double(lastFinalCPU) / 1e6) }
            let hypothesis = finals.map(\.text).joined(separator: " ")
            let e = WordErrorRate.errors(reference: cols[1], hypothesis: hypothesis)
            errors += e.errors
            words += e.words
            Console.out(String(format: "%-7@ wer %5.1f %%  %@", cols[0], 100 * Double(e.errors) / Double(max(1, e.words)), hypothesis))
        }
        let rtf = Double(cpuNs) / 1e6 / Double(max(1, audioMs))
        let delay = finalDelays.sorted()[finalDelays.count / 2]
        Console.out(String(format: "captions wer=%.3f rtf=%.3f final_after_speech_ms=%.0f words=%d", Double(errors) / Double(max(1, words)), rtf, delay, words))
    }
}

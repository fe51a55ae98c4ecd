import CallroomKit
import CallsAudio
import CallsCore
import CallsRecording
import CallsSupport
import Foundation

/// The recording's mixdown after a call (`OggOpusMixdown.mix`), on files like the recorder's:
/// `participants` Ogg Opus files of `seconds` of speech each (the bundled clips, looped, encoded
/// at the voice profile's 48 kb/s), each joining a second after the one before. Figures: the
/// mixdown's CPU per minute of the room, its wall time, and how much the process's memory grew.
enum MixdownBench {
    static func run(participants: Int, seconds: Int) {
        guard let resources = BotDirector.resources else { Console.fail("cannot find the bundled clips (set CALLROOM_RESOURCES)", code: ExitCode.failure) }
        let clips = ["ada", "grace", "alan", "kat", "claude"].compactMap { try? SoundFile.readMono48k(path: resources.appendingPathComponent("clips/\($0).wav").path) }
        guard !clips.isEmpty else { Console.fail("cannot read the bundled clips", code: ExitCode.failure) }
        let dir = NSTemporaryDirectory() + "callroom-mixbench-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var paths: [String] = []
        var packet = [UInt8](repeating: 0, count: 1500)
        for p in 0..<participants {
            let path = dir + "/p\(p).opus"
            guard let encoder = try? OpusEncoder(frameMs: 20, bitrate: Int32(OpusEncoder.Profile.voice.defaultBitrate)),
                  let writer = try? OggOpusWriter(path: path, serial: Int32(p + 1), tags: [OggOpusMixdown.offsetTag: "\(p * 1000)"]) else {
                Console.fail("cannot write \(path)", code: ExitCode.failure)
            }
            let clip = clips[p % clips.count]
            for i in 0..<(seconds * 50) {
                let frame = (0..<960).map { clip[(i * 960 + $0) % clip.count] }
                let n = (try? frame.withUnsafeBufferPointer { f in try packet.withUnsafeMutableBufferPointer { try encoder.encode(f, into: $0) } }) ?? 0
                try? writer.append(Array(packet[0..<n]), timestamp: UInt32(i * 960))
            }
            try? writer.finish()
            paths.append(path)
        }
        // (The process's resident memory, sampled while it mixes: how much it grew.)
        let cpu = CPUBench.threadCPU(), wall = monotonicNanoseconds()
        let (mixed, grewKiB) = ProcessUsage.growthKiB { () -> Double in
            do { return try OggOpusMixdown.mix(paths, into: dir + "/mixed.opus") } catch { Console.fail("mixdown: \(error)", code: ExitCode.failure) }
        }
        let cpuMs = Double(CPUBench.threadCPU() - cpu) / 1e6, wallMs = Double(monotonicNanoseconds() - wall) / 1e6
        let inputBytes = paths.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) }
        Console.out(String(format: "mixdown participants=%d seconds=%.0f cpu_ms=%.0f wall_ms=%.0f cpu_ms_per_room_minute=%.0f input_kib=%d memory_growth_kib=%d",
                           participants, mixed, cpuMs, wallMs, cpuMs * 60 / max(1, mixed), inputBytes / 1024, grewKiB))
    }
}

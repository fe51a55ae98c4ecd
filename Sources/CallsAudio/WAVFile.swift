import CSndFile
import CallsCore
import Foundation
import Synchronization

/// Reads a whole sound file (WAV or any format libsndfile knows) as 48 kHz mono Int16:
/// channels are averaged, other rates resampled with SpeexDSP at its best quality (the
/// whole file at once, exactly as long as the original).
public enum SoundFile {
    /// Refuses files longer than this, to bound memory.
    public static let maxSeconds = 600

    public static func readMono48k(path: String) throws(AudioError) -> [Int16] {
        var info = SF_INFO()
        guard let f = sf_open(path, Int32(SFM_READ), &info) else {
            throw .file(path: path, reason: String(cString: sf_strerror(nil)))
        }
        defer { sf_close(f) }
        let channels = Int(info.channels)
        let rate = Int(info.samplerate)
        guard channels > 0, rate > 0 else { throw .file(path: path, reason: "no audio channels") }
        guard info.frames <= Int64(maxSeconds * rate) else {
            throw .file(path: path, reason: "longer than \(maxSeconds) s")
        }
        var interleaved = [Int16](repeating: 0, count: Int(info.frames) * channels)
        let got = interleaved.withUnsafeMutableBufferPointer { sf_readf_short(f, $0.baseAddress, info.frames) }
        var mono = [Int16](repeating: 0, count: Int(got))
        for i in 0..<Int(got) {
            var sum = 0
            for c in 0..<channels { sum += Int(interleaved[i * channels + c]) }
            mono[i] = Int16(sum / channels)
        }
        guard !mono.isEmpty else { throw .file(path: path, reason: "contains no samples") }
        if rate == AudioFormat.sampleRate { return mono }
        // Once per file, off the real-time path: SpeexDSP's best quality (10; its VoIP default 5
        // dulls the top of a 16 kHz file's band, 0.12 wide-band PESQ on the bundled speech clip).
        return try Resampler(from: rate, to: AudioFormat.sampleRate, quality: 10).process(mono)
    }
}

/// `file:PATH` input: the file's audio played in real time, looping.
public final class FileInput: AudioInput, Sendable {
    public let name: String
    private let samples: [Int16]
    /// (Its one reader's: the lock is never contended, it makes that checked.)
    private let state: Locked<(position: Int, pacer: Pacer)>
    private let closed = Atomic<Bool>(false)

    public init(path: String, frameSamples: Int) throws(AudioError) {
        name = "file:\(path)"
        samples = try SoundFile.readMono48k(path: path)
        state = Locked((0, Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate))))
    }

    public func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        state.withLock { s in
            s.pacer.wait(samples: frame.count)
            for i in 0..<frame.count {
                frame[i] = samples[s.position]
                s.position += 1
                if s.position == samples.count { s.position = 0 }
            }
        }
    }

    public func close() { closed.store(true, ordering: .releasing) }
}

/// `file:PATH.wav` output: a 48 kHz mono 16-bit WAV written as heard, paced in real time.
/// The header is kept current on every write, so the file is valid even if the process dies.
public final class FileOutput: AudioOutput {
    public let name: String
    /// libsndfile's handle until `close`, and the samples being written (`write` and `close`
    /// come from different threads). The caller's frame is copied in sample by sample, so the
    /// compiler sees that no caller's pointer is kept with the file.
    private struct Writer: ~Copyable {
        var file: OpaquePointer?
        let staging = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 4800)
        deinit {
            if let file { sf_close(file) }
            staging.deallocate()
        }
    }
    private let writer: LockedState<Writer>
    /// The writer's alone (never contended).
    private let pacer: Locked<Pacer>
    private let paced: Bool

    /// - Parameter paced: false writes as fast as frames come (offline rendering, tests).
    public init(path: String, frameSamples: Int, paced: Bool = true) throws(AudioError) {
        name = "file:\(path)"
        var info = SF_INFO()
        info.samplerate = Int32(AudioFormat.sampleRate)
        info.channels = 1
        info.format = callroom_sf_format_wav_pcm16
        guard let f = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw .file(path: path, reason: String(cString: sf_strerror(nil)))
        }
        sf_command(f, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE))
        writer = LockedState(Writer(file: f))
        self.paced = paced
        pacer = Locked(Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate)))
    }

    public func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        if paced { pacer.withLock { $0.wait(samples: frame.count) } }
        let name = name
        try writer.withLock { w throws(AudioError) in
            guard let f = w.file else { throw .closed }
            var start = 0
            while start < frame.count {
                let n = min(w.staging.count, frame.count - start)
                for i in 0..<n { w.staging[i] = frame[start + i] }
                guard sf_write_short(f, w.staging.baseAddress, sf_count_t(n)) == n else {
                    throw .file(path: name, reason: String(cString: sf_strerror(f)))
                }
                start += n
            }
        }
    }

    public func close() {
        writer.withLock { w in
            if let f = w.file { sf_close(f) }
            w.file = nil
        }
    }
}

import CallRoomTestSupport
import CallsAudio
import Foundation
import Testing

@Suite("Audio endpoints: tone, null, file, ALSA null and file PCMs")
struct EndpointTests {
    @Test func parsesSpecs() throws {
        #expect(try AudioEndpoint(spec: "null") == .null)
        #expect(try AudioEndpoint(spec: "alsa:default") == .alsa("default"))
        #expect(try AudioEndpoint(spec: "file:/tmp/x.wav") == .file("/tmp/x.wav"))
        #expect(try AudioEndpoint(spec: "tone:440") == .tone(440))
        #expect(try AudioEndpoint(spec: "tone:440:700:300") == .tone(440, onMs: 700, offMs: 300))
        #expect(try AudioEndpoint(spec: "tone:440:700:300").description == "tone:440:700:300")
        for bad in ["", "alsa:", "tone:", "tone:-1", "tone:30000", "tone:a", "tone:440:0:1", "mic", "wav:x"] {
            #expect(throws: AudioError.self, "\(bad)") { try AudioEndpoint(spec: bad) }
        }
        #expect(throws: AudioError.self) { try AudioEndpoint.tone(440).makeOutput(frameSamples: 960) }
    }

    @Test func toneInputProducesItsFrequency() throws {
        let t = ToneInput(frequency: 440, frameSamples: 960)
        var all: [Int16] = []
        var frame = [Int16](repeating: 0, count: 960)
        for _ in 0..<10 { frame.withUnsafeMutableBufferPointer { t.fill($0) }; all += frame }
        #expect(SignalAnalysis.toneDominanceDB(all[...], frequency: 440, others: [220, 880, 1000]) > 30)
        #expect(abs(SignalAnalysis.rmsDBFS(all[...]) - (-15.05)) < 0.5, "amplitude 0.25 is -15 dBFS RMS")
    }

    @Test func toneKeepsItsAmplitudeForTenMinutesAtFullScale() {
        // The oscillator turns (cos, sin) by a step per sample: rounding must neither grow the
        // amplitude past Int16 (a trap) nor let it fade.
        let t = ToneInput(frequency: 997, frameSamples: 960, amplitude: 1)
        var frame = [Int16](repeating: 0, count: 960)
        var peak: Int16 = 0
        for i in 0..<(600 * 50) {
            frame.withUnsafeMutableBufferPointer { t.fill($0) }
            if i % 1000 == 999 { peak = max(peak, frame.max() ?? 0); #expect(frame.max() ?? 0 > 32_700) }
        }
        #expect(peak <= 32_766)
    }

    @Test func toneCadenceSpeaksInBursts() {
        let t = ToneInput(frequency: 440, frameSamples: 960, cadence: (onMs: 100, offMs: 100))
        var frame = [Int16](repeating: 0, count: 960)
        var levels: [Double] = []
        for _ in 0..<20 { frame.withUnsafeMutableBufferPointer { t.fill($0) }; levels.append(SignalAnalysis.rmsDBFS(frame[...])) }
        #expect(levels.prefix(5).allSatisfy { $0 > -20 })
        #expect(levels[5..<10].allSatisfy { $0 < -100 })
        #expect(levels[10..<15].allSatisfy { $0 > -20 })
    }

    @Test func syntheticEndpointsArePacedInRealTime() throws {
        let input = NullInput(frameSamples: 960)
        var frame = [Int16](repeating: 1, count: 960)
        let start = Date()
        for _ in 0..<10 { try frame.withUnsafeMutableBufferPointer { try input.read($0) } }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed > 0.15, "10 frames of 20 ms took \(elapsed) s")
        #expect(frame.allSatisfy { $0 == 0 })
        input.close()
        #expect(throws: AudioError.closed) { try frame.withUnsafeMutableBufferPointer { try input.read($0) } }
    }

    @Test func wavFileWrittenThenReadBack() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("out.wav")
        let out = try FileOutput(path: path, frameSamples: 960, paced: false)
        let t = ToneInput(frequency: 660, frameSamples: 960)
        var frame = [Int16](repeating: 0, count: 960)
        var written: [Int16] = []
        for _ in 0..<50 {
            frame.withUnsafeMutableBufferPointer { t.fill($0) }
            try frame.withUnsafeBufferPointer { try out.write($0) }
            written += frame
        }
        // Valid while still open (header kept current), and after close.
        #expect(SignalAnalysis.readWAV(path)?.samples.count == written.count)
        out.close()
        let back = try SoundFile.readMono48k(path: path)
        #expect(back == written)
    }

    @Test func fileInputResamplesAndDownmixes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        // A 16 kHz stereo WAV: 1 kHz in both channels, written by hand.
        let rate = 16_000, n = rate
        var pcm: [UInt8] = []
        for i in 0..<n {
            let v = Int16(sin(2 * Double.pi * 1000 * Double(i) / Double(rate)) * 12000)
            let u = UInt16(bitPattern: v)
            pcm += [UInt8(u & 0xFF), UInt8(u >> 8), UInt8(u & 0xFF), UInt8(u >> 8)]
        }
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)] }
        var wav = Array("RIFF".utf8) + le32(36 + pcm.count) + Array("WAVEfmt ".utf8) + le32(16)
        wav += [1, 0, 2, 0] + le32(rate) + le32(rate * 4) + [4, 0, 16, 0] + Array("data".utf8) + le32(pcm.count) + pcm
        let path = dir.file("in.wav")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(wav)))
        let s = try SoundFile.readMono48k(path: path)
        #expect(abs(s.count - 48_000) < 200)
        #expect(SignalAnalysis.toneDominanceDB(s[4800..<40_000], frequency: 1000, others: [500, 1500, 333]) > 25)
        #expect(throws: AudioError.self) { try SoundFile.readMono48k(path: dir.file("missing.wav")) }
    }

    @Test func alsaFilePCMRecordsWhatIsPlayed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let raw = dir.file("played.raw")
        let config = #"pcm.tap { type file slave.pcm { type null } file "\#(raw)" format "raw" }"#
        let out = try ALSAOutput(device: "tap", frameSamples: 960, configText: config)
        let t = ToneInput(frequency: 440, frameSamples: 960)
        var frame = [Int16](repeating: 0, count: 960)
        for _ in 0..<20 {
            frame.withUnsafeMutableBufferPointer { t.fill($0) }
            try frame.withUnsafeBufferPointer { try out.write($0) }
        }
        out.close()
        let bytes = [UInt8](FileManager.default.contents(atPath: raw) ?? Data())
        #expect(bytes.count >= 960 * 2 * 16, "most frames reached the file (got \(bytes.count) bytes)")
        let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        #expect(SignalAnalysis.toneDominanceDB(samples[...], frequency: 440, others: [220, 880]) > 25)
    }

    @Test func alsaFilePCMCapturesFromItsInputFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let inRaw = dir.file("in.raw")
        let t = ToneInput(frequency: 880, frameSamples: 48_000)
        var second = [Int16](repeating: 0, count: 48_000)
        second.withUnsafeMutableBufferPointer { t.fill($0) }
        #expect(FileManager.default.createFile(atPath: inRaw, contents: second.withUnsafeBytes { Data($0) }))
        let config = #"pcm.mic { type file slave.pcm { type null } file "/dev/null" infile "\#(inRaw)" format "raw" }"#
        let input = try ALSAInput(device: "mic", frameSamples: 960, configText: config)
        var frame = [Int16](repeating: 0, count: 960)
        var got: [Int16] = []
        for _ in 0..<10 { try frame.withUnsafeMutableBufferPointer { try input.read($0) }; got += frame }
        input.close()
        #expect(SignalAnalysis.toneDominanceDB(got[...], frequency: 880, others: [440, 1760]) > 25)
    }

    @Test func alsaNullPCMIsPacedAndSilent() throws {
        let input = try ALSAInput(device: "null", frameSamples: 960, configText: "pcm.null { type null }")
        var frame = [Int16](repeating: 7, count: 960)
        let start = Date()
        for _ in 0..<10 { try frame.withUnsafeMutableBufferPointer { try input.read($0) } }
        #expect(Date().timeIntervalSince(start) > 0.15)
        #expect(frame.allSatisfy { $0 == 0 })
        input.close()
    }

    @Test func missingDeviceFallsBackToNullWithANotice() throws {
        let (input, notice) = try AudioEndpoint.alsa("hw:97,0").openInputFallingBack(frameSamples: 960)
        #expect(input.name == "null")
        #expect(notice?.contains("no capture device") == true)
        let (output, n2) = try AudioEndpoint.alsa("hw:97,0").openOutputFallingBack(frameSamples: 960)
        #expect(output.name == "null")
        #expect(n2 != nil)
        #expect(throws: AudioError.self) { try AudioEndpoint.file("/nonexistent/x.wav").openInputFallingBack(frameSamples: 960) }
    }

    @Test func deviceListStampMovesOnlyWhenTheConfigurationDoes() throws {
        let dir = TemporaryDirectory("alsa-stamp")
        defer { dir.remove() }
        let rc = dir.file("asoundrc"), nodes = dir.file("snd")
        let paths = [rc, nodes]
        let missing = ALSADeviceList.changeStamp(paths: paths)
        #expect(ALSADeviceList.changeStamp(paths: paths) == missing)
        try "pcm.headset { type null }\n".write(toFile: rc, atomically: false, encoding: .utf8)
        let written = ALSADeviceList.changeStamp(paths: paths)
        #expect(written != missing, "a new configuration file")
        #expect(ALSADeviceList.changeStamp(paths: paths) == written, "nothing changed, the same stamp")
        try FileManager.default.createDirectory(atPath: nodes, withIntermediateDirectories: false)
        let plugged = ALSADeviceList.changeStamp(paths: paths)
        #expect(plugged != written, "the device directory appeared")
        #expect(FileManager.default.createFile(atPath: nodes + "/pcmC1D0p", contents: nil))
        #expect(ALSADeviceList.changeStamp(paths: paths) != plugged, "a card's node appeared in it")
        #expect(ALSADeviceList.watchedPaths.contains("/dev/snd"))
    }
}

@Suite("ALSA periods and Opus profiles")
struct PeriodAndProfileTests {
    @Test(arguments: [2, 5, 10, 20])
    func requestedPeriodIsGranted(ms: Int) throws {
        let out = try ALSAOutput(device: "null", frameSamples: 960, periodMs: ms, configText: "pcm.null { type null }")
        defer { out.close() }
        #expect(out.periodSamples == ms * 48, "period \(out.periodSamples) samples for \(ms) ms")
        let input = try ALSAInput(device: "null", frameSamples: 960, periodMs: ms, configText: "pcm.null { type null }")
        defer { input.close() }
        #expect(input.periodSamples == ms * 48)
    }

    @Test(arguments: [2, 5, 10, 20])
    func playbackQueuesOnePeriodNotAFullBuffer(ms: Int) throws {
        // A frame is written whole and the write returns once the queue is down to one period:
        // the buffer holds a frame plus two periods, the write waits for all but one period free.
        let out = try ALSAOutput(device: "null", frameSamples: 960, periodMs: ms, configText: "pcm.null { type null }")
        defer { out.close() }
        #expect(out.bufferSamples == 960 + 2 * ms * 48, "buffer \(out.bufferSamples) samples for \(ms) ms periods")
        #expect(out.availMin == out.bufferSamples - out.periodSamples)
        #expect(out.availMin >= 960, "a whole frame fits when the write is let in")
        let frame = [Int16](repeating: 0, count: 960)
        try frame.withUnsafeBufferPointer { try out.write($0) }
    }

    @Test func musicProfileEncodesAFullBandSignal() throws {
        let enc = try OpusEncoder(frameMs: 20, bitrate: 64_000, profile: .music)
        let dec = try OpusDecoder()
        let t = ToneInput(frequency: 12_000, frameSamples: 960)
        var pcm = [Int16](repeating: 0, count: 960), out = [Int16](repeating: 0, count: 960), all: [Int16] = []
        var packet = [UInt8](repeating: 0, count: 1500)
        for _ in 0..<20 {
            pcm.withUnsafeMutableBufferPointer { t.fill($0) }
            let n = try pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBufferPointer { try enc.encode(p, into: $0) } }
            _ = packet.prefix(n).withUnsafeBufferPointer { p in out.withUnsafeMutableBufferPointer { dec.decode(p, into: $0) } }
            all += out
        }
        #expect(SignalAnalysis.rmsDBFS(all[4800...]) > -25, "a 12 kHz tone survives the music profile")
    }
}

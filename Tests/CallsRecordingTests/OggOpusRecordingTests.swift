import CallRoomTestSupport
import CallsAudio
import CallsCore
import CallsRecording
import Foundation
import XCTest

/// Recordings checked from outside: `opusinfo` and `opusdec` (opus-tools) read every file these
/// writers make — finished, cut by a crash and repaired, with gaps kept in time.
final class OggOpusRecordingTests: XCTestCase {
    var dir: TemporaryDirectory!
    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"), "needs opus-tools (scripts/install-deps.sh)")
        dir = TemporaryDirectory("callroom-rec")
    }
    override func tearDown() { dir?.remove() }

    /// `count` real Opus packets (20 ms) of a tone, as a client sends them.
    func tonePackets(_ count: Int, frequency: Double = 440) throws -> [[UInt8]] {
        let enc = try OpusEncoder(frameMs: 20)
        let tone = ToneInput(frequency: frequency, frameSamples: 960)
        var pcm = [Int16](repeating: 0, count: 960), out = [UInt8](repeating: 0, count: 1500)
        return try (0..<count).map { _ in
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let n = try pcm.withUnsafeBufferPointer { p in try out.withUnsafeMutableBufferPointer { try enc.encode(p, into: $0) } }
            return Array(out.prefix(n))
        }
    }

    /// opusinfo's verdict: exit status, its text, and the playback length it reports (s).
    func opusinfo(_ path: String) throws -> (status: Int32?, text: String, seconds: Double?) {
        let p = try ManagedProcess("/usr/bin/opusinfo", [path])
        let status = p.wait(timeout: 20)
        let text = p.output.joined(separator: "\n") + p.errorOutput
        // "Playback length: 0m:03.000s"
        var seconds: Double?
        if let line = p.output.first(where: { $0.contains("Playback length:") }),
           let spec = line.split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) {
            let parts = spec.split(separator: "m")
            if parts.count == 2, let m = Double(parts[0]), let s = Double(parts[1].dropFirst().dropLast()) { seconds = m * 60 + s }
        }
        return (status, text, seconds)
    }

    func decode(_ path: String) throws -> [Int16] {
        let wav = path + ".wav"
        let p = try ManagedProcess("/usr/bin/opusdec", ["--quiet", "--rate", "48000", path, wav])
        XCTAssertEqual(p.wait(timeout: 20), 0, p.errorOutput)
        return try XCTUnwrap(SignalAnalysis.readWAV(wav)).samples
    }

    func testAParticipantsPacketsBecomeAFileWithTheCallsTimelineGapsIncluded() throws {
        let packets = try tonePackets(150)
        let path = dir.file("alice.opus")
        let w = try OggOpusWriter(path: path, serial: 7, tags: ["artist": "alice", "title": "room"])
        let base: UInt32 = 0xFFFF_0000  // the RTP clock wraps during the recording
        for (i, p) in packets.enumerated() {
            if (50..<100).contains(i) { continue }  // a second of nothing (muted, DTX or lost)
            try w.append(p, timestamp: base &+ UInt32(i * 960))
            if i == 120 {
                try w.append(p, timestamp: base &+ UInt32(i * 960))  // a duplicate
                try w.append(packets[0], timestamp: base &+ UInt32(40 * 960))  // a late one
            }
        }
        XCTAssertEqual(w.skippedPackets, 2)
        try w.finish()
        let info = try opusinfo(path)
        XCTAssertEqual(info.status, 0, info.text)
        XCTAssertFalse(info.text.lowercased().contains("warning"), info.text)
        let seconds = try XCTUnwrap(info.seconds, info.text)
        XCTAssertEqual(seconds, 3.0, accuracy: 0.01, "the call's 3 s, the silent second included: \(info.text)")
        let s = try OggOpusFile.inspect(path)
        XCTAssertTrue(s.ended)
        XCTAssertEqual(s.serial, 7)
        XCTAssertEqual(s.seconds, seconds, accuracy: 0.001)
        // Decoded from outside: tone, a second of silence where nothing came, tone.
        let pcm = try decode(path)
        let windows = SignalAnalysis.windows(pcm, size: 4800)  // 100 ms
        func toneIn(_ r: Range<Int>) -> Int { r.filter { SignalAnalysis.toneDominanceDB(windows[$0], frequency: 440, others: [1000, 2000]) > 20 }.count }
        func quietIn(_ r: Range<Int>) -> Int { r.filter { SignalAnalysis.rmsDBFS(windows[$0]) < -50 }.count }
        XCTAssertGreaterThanOrEqual(toneIn(1..<9), 7, "the first second is the tone")
        XCTAssertGreaterThanOrEqual(quietIn(11..<19), 7, "the gap is silence, in its place")
        XCTAssertGreaterThanOrEqual(toneIn(21..<29), 7, "the tone comes back a second later")
    }

    func testARecordingCutByAKillIsPlayableToItsLastSecondAndFinalisedAtRestart() throws {
        let packets = try tonePackets(125)  // 2.5 s
        let path = dir.file("cut.opus")
        let w = try OggOpusWriter(path: path, serial: 9)
        for (i, p) in packets.enumerated() { try w.append(p, timestamp: UInt32(i * 960)) }
        // What a kill -9 leaves now: the pages write(2) handed the kernel (no user-space buffer),
        // plus, say, a page torn half-way.
        let crashed = dir.file("crashed.opus")
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        bytes.append(contentsOf: Array("OggS".utf8) + [UInt8](repeating: 0x5A, count: 40))
        try bytes.write(to: URL(fileURLWithPath: crashed))
        let before = try OggOpusFile.inspect(crashed)
        XCTAssertFalse(before.ended)
        XCTAssertGreaterThanOrEqual(before.seconds, 1.9, "flushed at least every second: \(before)")
        let after = try OggOpusFile.finalise(crashed)
        XCTAssertTrue(after.ended)
        XCTAssertEqual(after.seconds, before.seconds)
        XCTAssertEqual(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: crashed)[.size] as? Int), after.validBytes, "the torn page is gone")
        let info = try opusinfo(crashed)
        XCTAssertEqual(info.status, 0, info.text)
        XCTAssertFalse(info.text.lowercased().contains("warning"), info.text)
        XCTAssertEqual(try XCTUnwrap(info.seconds, info.text), after.seconds, accuracy: 0.01)
        XCTAssertEqual(try OggOpusFile.finalise(crashed), after, "finalising twice changes nothing")
        try w.finish()
        XCTAssertEqual(try XCTUnwrap(opusinfo(path).seconds), 2.5 - 312.0 / 48_000, accuracy: 0.01)
    }

    func testTheMixedRecordingIsEncodedByLibopusenc() throws {
        let path = dir.file("mixed.opus")
        let w = try OggOpusMixWriter(path: path, tags: ["title": "room mix"])
        let tone = ToneInput(frequency: 440, frameSamples: 960)
        var pcm = [Int16](repeating: 0, count: 960)
        for i in 0..<100 {  // 2 s
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            try pcm.withUnsafeBufferPointer { try w.write($0) }
            if i == 75 {
                // Mid-recording (1.5 s in): what is on disk already plays, at least a second of it.
                let copy = dir.file("mid.opus")
                try FileManager.default.copyItem(atPath: path, toPath: copy)
                let s = try OggOpusFile.finalise(copy)
                XCTAssertGreaterThanOrEqual(s.seconds, 0.5, "\(s)")
                XCTAssertEqual(try opusinfo(copy).status, 0)
            }
        }
        try w.finish()
        let info = try opusinfo(path)
        XCTAssertEqual(info.status, 0, info.text)
        XCTAssertEqual(try XCTUnwrap(info.seconds, info.text), 2.0, accuracy: 0.02)
        let windows = SignalAnalysis.windows(try decode(path), size: 4800)
        XCTAssertGreaterThanOrEqual(windows.filter { SignalAnalysis.toneDominanceDB($0, frequency: 440, others: [1000, 2000]) > 20 }.count, 15)
    }

    func testAFullDiskStopsTheRecordingCleanlyAndKeepsWhatWasWritten() throws {
        try XCTSkipUnless(getuid() == 0, "needs root to mount a small tmpfs")
        let mount = dir.file("small")
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let m = try ManagedProcess("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=16k", "tmpfs", mount])
        try XCTSkipUnless(m.wait(timeout: 10) == 0, "cannot mount a tmpfs here: \(m.errorOutput)")
        defer { _ = try? ManagedProcess("/usr/bin/umount", [mount]).wait(timeout: 10) }
        let path = mount + "/full.opus"
        let w = try OggOpusWriter(path: path, serial: 3)
        var failure: RecordingError?
        let packets = try tonePackets(50)
        var i = 0
        while failure == nil && i < 5000 {
            do { try w.append(packets[i % 50], timestamp: UInt32(i * 960)) } catch { failure = error }
            i += 1
        }
        let error = try XCTUnwrap(failure, "16 KiB fill up")
        XCTAssertTrue(error.isDiskFull, "\(error)")
        XCTAssertTrue(error.description.contains("No space left"), error.description)
        try? w.finish()  // the end page may not fit either: the file stays what was written
        let s = try OggOpusFile.finalise(path)
        XCTAssertTrue(s.ended)
        XCTAssertGreaterThan(s.seconds, 1, "what fitted is kept and playable: \(s)")
        XCTAssertEqual(try opusinfo(path).status, 0)
    }
}

extension OggOpusRecordingTests {
    func testTheMixdownPlacesEachParticipantWhereTheyStarted() throws {
        let a = dir.file("a.opus"), b = dir.file("b.opus")
        let wa = try OggOpusWriter(path: a, serial: 1, tags: [OggOpusMixdown.offsetTag: "0"])
        for (i, p) in try tonePackets(100, frequency: 440).enumerated() { try wa.append(p, timestamp: UInt32(i * 960)) }
        try wa.finish()
        let wb = try OggOpusWriter(path: b, serial: 2, tags: [OggOpusMixdown.offsetTag: "1000"])  // joined a second later
        for (i, p) in try tonePackets(100, frequency: 660).enumerated() { try wb.append(p, timestamp: 77 &+ UInt32(i * 960)) }
        try wb.finish()
        let mixed = dir.file("mixed.opus")
        let seconds = try OggOpusMixdown.mix([a, b], into: mixed)
        XCTAssertEqual(seconds, 3.0, accuracy: 0.03)
        let info = try opusinfo(mixed)
        XCTAssertEqual(info.status, 0, info.text)
        XCTAssertEqual(try XCTUnwrap(info.seconds, info.text), 3.0, accuracy: 0.05)
        let w = SignalAnalysis.windows(try decode(mixed), size: 4800)
        func has(_ f: Double, _ r: Range<Int>) -> Int { r.filter { SignalAnalysis.tonePower(w[$0], frequency: f) > 1e-4 }.count }
        XCTAssertGreaterThanOrEqual(has(440, 1..<9), 7, "a alone first")
        XCTAssertLessThanOrEqual(has(660, 1..<9), 1, "b not yet")
        XCTAssertGreaterThanOrEqual(has(440, 11..<19), 7, "both in the middle")
        XCTAssertGreaterThanOrEqual(has(660, 11..<19), 7)
        XCTAssertLessThanOrEqual(has(440, 21..<29), 1, "a gone")
        XCTAssertGreaterThanOrEqual(has(660, 21..<29), 7, "b alone last")
        // Where each starts, from its header pages alone (the WebM's audio is placed by it).
        XCTAssertEqual(OggOpusMixdown.startOffsetMs(a), 0)
        XCTAssertEqual(OggOpusMixdown.startOffsetMs(b), 1000)
        XCTAssertNil(OggOpusMixdown.startOffsetMs(mixed + ".none"))
        try Data("not an ogg file".utf8).write(to: URL(fileURLWithPath: dir.file("x.opus")))
        XCTAssertNil(OggOpusMixdown.startOffsetMs(dir.file("x.opus")))
    }
}

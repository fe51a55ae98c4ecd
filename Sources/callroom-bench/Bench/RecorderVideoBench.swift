import CallroomKit
import CallsCore
import CallsMembers
import CallsStore
import CallsSupport
import CallsVideo
import Foundation

/// The server recorder's video path, measured on the real `RoomRecorder`: a sender's VP8 frames
/// (the test pattern, real libvpx, packetised as the SDK sends them) handed to `received` as the
/// member's receive thread does — RTP back into frames (`VP8FrameAssembler`), frames into the
/// sender's IVF (libavformat) — then the stop (`finished`: the WebM made by `WebMMuxer`, packets
/// copied, and the row written).
/// Figures: receive-thread CPU per frame and per packet, the share of a core one sender at
/// 15 fps costs, and the stop's muxing time per minute of video; beside VP8 decoding of the same
/// frames (what a recorder that decoded would pay at the least).
enum RecorderVideoBench {
    struct Figures {
        var width = 0, height = 0
        var frames = 0, packets = 0
        var usPerFrame = 0.0, usPerPacket = 0.0
        var decodeUsPerFrame = 0.0
        var muxMsPerMinute = 0.0
        var ivfBytes: Int64 = 0
    }

    static func run(width: Int, height: Int, kbps: Int, seconds: Int) -> Figures {
        let dir = NSTemporaryDirectory() + "callroom-recbench-\(getpid())-\(width)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard let store = try? CallStore(path: dir + ".sqlite"),
              let recorder = try? RoomRecorder(config: .init(sessionId: "bench", rid: "rec_bench", dir: dir, publicURL: "http://127.0.0.1"),
                                               store: store, log: ServerLog(sink: { _ in }), outbox: .none, retries: WriteRetries()),
              let encoder = try? VP8Encoder(.init(width: width, height: height, fps: 15, bitrateKbps: kbps)),
              let decoder = try? VP8Decoder() else {
            Console.fail("cannot set up the recorder bench at \(width)x\(height)", code: ExitCode.failure)
        }
        defer { try? FileManager.default.removeItem(atPath: dir + ".sqlite") }
        let source = TestPatternSource(name: "bench", width: width, height: height)
        let speaker = ServerMember.Speaker(uid: "camera", pid: "p1", name: "Camera")
        var f = Figures(width: width, height: height)
        var sequence: UInt16 = 0
        var recordNs: UInt64 = 0, decodeNs: UInt64 = 0
        for i in 0..<(seconds * 15) {
            guard let frame = try? source.read(at: UInt64(i) * 66_666_667), let e = try? encoder.encode(frame, keyframe: i == 0) else { continue }
            let timestamp = UInt32(truncatingIfNeeded: i * 6000)
            let chunks = VP8Payload.packetize(e.data, pictureID: i & 0x7FFF)
            let datagrams = chunks.enumerated().map { k, chunk in
                RTPPacket(marker: k == chunks.count - 1, payloadType: VP8Payload.payloadType, sequenceNumber: sequence &+ UInt16(k),
                          timestamp: timestamp, ssrc: 0x5EED, payload: chunk).encoded()
            }
            sequence &+= UInt16(chunks.count)
            let before = CPUBench.threadCPU()
            for d in datagrams {
                d.withUnsafeBytes { raw in
                    guard let h = try? RTPHeader(parsing: raw) else { return }
                    let payload = UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[h.payloadRange])
                    try? recorder.received(h, payload: payload, from: speaker, atMs: Int64(i) * 67)
                }
            }
            recordNs += CPUBench.threadCPU() - before
            let t = CPUBench.threadCPU()
            _ = try? decoder.decode(e.data)
            decodeNs += CPUBench.threadCPU() - t
            f.frames += 1
            f.packets += datagrams.count
        }
        let ivf = dir + "/p1.ivf"
        f.ivfBytes = (try? FileManager.default.attributesOfItem(atPath: ivf)[.size] as? NSNumber)?.int64Value ?? 0
        f.usPerFrame = Double(recordNs) / 1000 / Double(max(1, f.frames))
        f.usPerPacket = Double(recordNs) / 1000 / Double(max(1, f.packets))
        f.decodeUsPerFrame = Double(decodeNs) / 1000 / Double(max(1, f.frames))
        // The stop, as the room stops it: the track finished and put into its WebM (video alone:
        // no audio was sent), the row written.
        let start = monotonicNanoseconds()
        recorder.finished(failure: nil)
        let muxMs = Double(monotonicNanoseconds() - start) / 1e6
        if !FileManager.default.fileExists(atPath: dir + "/p1.webm") { Console.out("  (the WebM was not made)") }
        f.muxMsPerMinute = muxMs * 60 / Double(seconds)
        return f
    }
}

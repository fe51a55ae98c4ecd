import CallroomKit
import CallsCore
import CallsTUI
import CallsVideo
import CometChatCallsSDK
import Foundation

/// `callroom bench video`: what video costs and how fast it is. VP8 encode and decode per
/// frame (the test pattern, real libvpx), the call screen's render time with 4, 9 and 25 video
/// tiles at 120×40 (every tile a new frame every render: the worst case), the server recorder's
/// video path (`RecorderVideoBench`), the relay's cost per forwarded copy, and glass-to-glass
/// latency through an in-process server (the pattern's stamped capture time read back from
/// the decoded frame on the receiver). Last line machine-readable.
enum VideoBench {
    static func run(seconds: Int) async {
        Console.out("callroom bench video")
        var summary: [String] = []
        for (w, h, kbps) in [(160, 90, 120), (320, 180, 250), (640, 360, 600)] {
            let (enc, dec, kbOut) = codec(width: w, height: h, kbps: kbps, frames: 150)
            Console.out(String(format: "VP8 %dx%d @%d kb/s target: encode %.2f ms, decode %.2f ms per frame; at 15 fps %.1f %% + %.1f %% of a core; %.0f kb/s out",
                               w, h, kbps, enc, dec, enc * 15 / 10, dec * 15 / 10, kbOut))
            if w == 320 { summary += [String(format: "encode_ms=%.2f", enc), String(format: "decode_ms=%.2f", dec)] }
        }
        for mode in [PictureMode.truecolor, .indexed256, .monochrome] {
            for n in [4, 9, 25] {
                let (median, p95) = render(tiles: n, mode: mode, frames: 200)
                Console.out(String(format: "render %2d video tiles 120x40 %@: median %.2f ms, p95 %.2f ms per frame", n, mode.rawValue, median, p95))
                if mode == .truecolor { summary.append(String(format: "render%d_ms=%.2f", n, median)) }
            }
        }
        for graphics in [TerminalGraphics.kitty, .sixel] {
            for n in [4, 9, 25] {
                let (median, p95, kb, pictures) = render(tiles: n, mode: .truecolor, graphics: graphics, frames: 60)
                Console.out(String(format: "render %2d video tiles 120x40 as %@ pixels (10x20 px cells, every tile a new frame each time): median %.2f ms, p95 %.2f ms per frame, %.1f pictures drawn per frame (4 ms budget), %.0f KB of escapes per frame",
                                   n, graphics.rawValue, median, p95, pictures, kb))
                if n == 9 { summary.append(String(format: "\(graphics.rawValue)9_ms=%.2f", median)) }
            }
        }
        for (w, h, kbps) in [(320, 180, 250), (640, 360, 600)] {
            let r = RecorderVideoBench.run(width: w, height: h, kbps: kbps, seconds: 30)
            Console.out(String(format: "recorder %dx%d: %.1f µs of receive-thread CPU per frame (%.1f packets, %.2f µs each: RTP → frame → IVF), %.2f %% of a core per sender at 15 fps; VP8 decode of the same frames %.0f µs (%.0fx); at the stop %.0f ms per minute of video into WebM; IVF %.0f KB/s",
                               w, h, r.usPerFrame, Double(r.packets) / Double(max(1, r.frames)), r.usPerPacket, r.usPerFrame * 15 / 1e4,
                               r.decodeUsPerFrame, r.decodeUsPerFrame / max(0.001, r.usPerFrame), r.muxMsPerMinute, Double(r.ivfBytes) / 30 / 1000))
            if w == 640 { summary.append(String(format: "recorder_us_per_frame=%.1f", r.usPerFrame)) }
        }
        let (us, copies) = await relayCost(seconds: seconds)
        Console.out(String(format: "relay: %.1f µs of relay-thread CPU per forwarded video copy (%d copies of 1 sender to 5 subscribers, 640x360 pattern, audio muted; the relay's idle cost over as long subtracted)", us, copies))
        summary.append(String(format: "relay_us_per_copy=%.1f", us))
        let (m, p) = await glassToGlass(seconds: seconds)
        Console.out(String(format: "glass to glass (capture → VP8 → SRTP → relay → decode), 320x180@15: median %.0f ms, p95 %.0f ms (the call screen adds up to 67 ms: it takes a new frame every other 30 Hz tick)", m, p))
        summary.append(String(format: "glass_to_glass_ms=%.0f", m))
        Console.out("video " + summary.joined(separator: " "))
    }

    static func codec(width: Int, height: Int, kbps: Int, frames: Int) -> (encodeMs: Double, decodeMs: Double, kbps: Double) {
        let src = TestPatternSource(name: "bench", width: width, height: height)
        guard let enc = try? VP8Encoder(.init(width: width, height: height, fps: 15, bitrateKbps: kbps)), let dec = try? VP8Decoder() else {
            Console.fail("libvpx refused \(width)x\(height)", code: ExitCode.failure)
        }
        var encNs: UInt64 = 0, decNs: UInt64 = 0, bytes = 0
        for i in 0..<frames {
            guard let f = try? src.read(at: UInt64(i) * 66_666_667) else { continue }
            let t0 = monotonicNanoseconds()
            guard let e = try? enc.encode(f) else { continue }
            let t1 = monotonicNanoseconds()
            _ = try? dec.decode(e.data)
            decNs += monotonicNanoseconds() - t1
            encNs += t1 - t0
            bytes += e.data.count
        }
        return (Double(encNs) / Double(frames) / 1e6, Double(decNs) / Double(frames) / 1e6, Double(bytes * 8) / (Double(frames) / 15) / 1000)
    }

    static func render(tiles: Int, mode: PictureMode, frames: Int) -> (Double, Double) {
        let r = render(tiles: tiles, mode: mode, graphics: .cells, frames: frames)
        return (r.median, r.p95)
    }

    /// The same with pictures as pixels: the screen, then the graphics writer's encoding of
    /// every tile's new frame (kitty: RGB, zlib, base64; sixel: chafa), written nowhere.
    static func render(tiles: Int, mode: PictureMode, graphics: TerminalGraphics, frames: Int) -> (median: Double, p95: Double, kilobytes: Double, pictures: Double) {
        let writer = graphics == .cells ? nil : PixelPictureWriter(graphics: graphics)
        var m = CallViewModel(title: "Video bench")
        let ps = (0..<tiles).map { i -> Participant in
            var p = Participant(uid: "u\(i)", name: "Participant \(i + 1)")
            p.pid = "p\(i)"
            return p
        }
        m.apply(.sessionJoined, localPID: "p0")
        m.apply(.participantListChanged(participants: ps), localPID: "p0")
        m.logHidden = true
        m.pictureMode = mode
        m.graphics = graphics
        let sources = (0..<tiles).map { TestPatternSource(name: "p\($0)", width: 320, height: 180) }
        let term = MemoryTerminal(width: 120, height: 40)
        var times: [Double] = []
        var serial: UInt64 = 0
        for f in 0..<frames {
            for (i, s) in sources.enumerated() {
                serial += 1
                if let fr = try? s.read(at: UInt64(f) * 66_666_667) { m.video["p\(i)"] = TileVideo(frame: fr, serial: serial, mirrored: i == 0) }
            }
            let t0 = monotonicNanoseconds()
            let screen = CallScreenRenderer.render(m, width: 120, height: 40)
            term.present(screen)
            _ = writer?.update(screen.pixelPictures, cell: (10, 20)) { _ in }
            times.append(Double(monotonicNanoseconds() - t0) / 1e6)
        }
        let kb = Double(writer?.bytesWritten ?? 0) / Double(frames) / 1000
        let pictures = Double(writer?.imagesSent ?? 0) / Double(frames)
        return (PipelineBench.percentile(times, 0.5), PipelineBench.percentile(times, 0.95), kb, pictures)
    }

    /// CPU the relay's worker threads spent per forwarded video copy: one sender, five viewers.
    static func relayCost(seconds: Int) async -> (Double, Int) {
        let room = PipelineBench.startServer()
        let b = SessionSettingsBuilder().setSessionType(.video).setAudioInput("null").setAudioOutput("none").startAudioMuted(true)
            .setVideoFormat(width: 640, height: 360, fps: 15, bitrateKbps: 600)
        // The camera starts paused: the first interval is the relay's idle cost, subtracted.
        let sender = await PipelineBench.client(room, uid: "camera", settings: b.setVideoSource("pattern").startVideoPaused(true).build(), probe: nil)
        var viewers: [CallsClient] = []
        for i in 0..<5 {
            viewers.append(await PipelineBench.client(room, uid: "viewer\(i)", settings: b.setVideoSource("none").startVideoPaused(false).build(), probe: nil))
        }
        try? await Task.sleep(nanoseconds: 1_000_000_000)
        guard let counters = room.server.relayCounters else { Console.fail("no relay", code: ExitCode.failure) }
        let i0 = relayThreadsCPU()
        try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
        let idle = relayThreadsCPU() - i0
        sender.setVideoPaused(false)
        try? await Task.sleep(nanoseconds: 1_000_000_000)
        let c0 = counters.videoForwarded.load(ordering: .relaxed), t0 = relayThreadsCPU()
        try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
        let c1 = counters.videoForwarded.load(ordering: .relaxed), t1 = relayThreadsCPU() - idle
        for v in viewers { await v.leave() }
        await sender.leave()
        room.server.stop()
        let copies = Int(c1 - c0)
        return (copies > 0 ? (t1 - t0) * 1e6 / Double(copies) : .nan, copies)
    }

    /// CPU seconds of this process's `callroom.relay.*` threads (/proc schedstat: nanoseconds on CPU).
    static func relayThreadsCPU() -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var ns = 0.0
        for t in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(t)/comm", encoding: .utf8), comm.hasPrefix("callroom.relay"),
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(t)/schedstat", encoding: .utf8),
                  let first = stat.split(separator: " ").first, let v = Double(first) else { continue }
            ns += v
        }
        return ns / 1e9
    }

    static func glassToGlass(seconds: Int) async -> (Double, Double) {
        let room = PipelineBench.startServer()
        let b = SessionSettingsBuilder().setSessionType(.video).setAudioInput("null").setAudioOutput("none").enableVideoStamps(true)
        let sender = await PipelineBench.client(room, uid: "camera", settings: b.setVideoSource("pattern").build(), probe: nil)
        let viewer = await PipelineBench.client(room, uid: "viewer", settings: b.setVideoSource("none").build(), probe: nil)
        guard let pid = sender.localParticipantID else { Console.fail("no sender pid", code: ExitCode.failure) }
        let stamps = Locked<[Double]>([])
        viewer.setVideoFrameHandler { from, frame in
            guard from == pid, let s = FrameStamp.read(frame) else { return }
            let now = UInt32(truncatingIfNeeded: monotonicNanoseconds() / 1_000_000)
            stamps.withLock { $0.append(Double(Int32(bitPattern: now &- s))) }
        }
        try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
        await viewer.leave()
        await sender.leave()
        room.server.stop()
        let xs = stamps.withLock { $0 }
        guard !xs.isEmpty else { Console.fail("no frames arrived", code: ExitCode.failure) }
        return (PipelineBench.percentile(xs, 0.5), PipelineBench.percentile(xs, 0.95))
    }
}

import CallroomKit
import CallsAudio
import CallsCore
import CallsServer
import CallsTUI
import CometChatCallsSDK
import Foundation

/// `callroom bench latency|quality|cpu`: measurements of the real pipeline, printed as figures
/// whose last line is machine-readable (docs/benchmarks.md records them).
enum BenchCommand {
    static let usage = """
        USAGE: callroom bench latency [--frame-ms 10|20] [--period-ms auto|2|5|10|20] [--seconds N] [--jitter-frames N]
                                      [--loss PCT --jitter MS] [--profile voice|music|low-delay]
               callroom bench render [--participants N] [--layout TILE|SPOTLIGHT|SIDEBAR] [--frames N]
               callroom bench quality [--loss PCT] [--burst N] [--jitter MS] [--seconds N] [--seed N]
                                      [--input FILE.wav] [--record OUT.wav] [--complexity 0-10] [--bitrate BPS]
                                      [--redundancy on|off] [--profile voice|music|low-delay] [--jitter-frames N]
               callroom bench cpu [--speakers N] [--frames N] [--call-seconds N]
               callroom bench udp-floor [--destinations N] [--datagrams N]
               callroom bench ring --server URL --auth-key KEY [--calls N] [--simultaneous N] [--server-pid PID]
               callroom bench webhooks [--calls N] [--outage-calls N] [--outage-seconds S]
               callroom bench join --server URL --auth-key KEY [--joins N] [--ca-file FILE | --insecure]
               callroom bench captions [--engine pocketsphinx,whisper,moonshine] [--language en-US] [--model-dir DIR]
                                       [--whisper-python PATH] [--whisper-model-dir DIR] [--moonshine-python PATH]
                                       [--moonshine-model-dir DIR] [--threads N] [--librivox DIR]
                                       [--bitrate B/S] [--pause-hint-ms MS] [--hangover-ms MS]
                                       [--long-utterance-ms MS] [--max-utterance-ms MS]
               callroom bench video [--seconds N]
               callroom bench mixdown [--participants N] [--seconds S]
               callroom bench peer-latency --server URL --auth-key KEY --session ID [--seconds N]

        latency  mouth-to-ear through the whole real pipeline on loopback: a clicking input on one
                 client → capture → Opus → RTP/UDP → callroomd's relay (in process) → jitter buffer →
                 decode → mix → playback on another; per-stage breakdown; last line
                 mouth_to_ear_ms median=X p95=Y
        quality  a continuous tone (or --input, looped) through random loss (--burst N: in bursts
                 of N packets on average) and delay variation applied before the listener's jitter
                 buffer; how much was played, repaired from redundant copies, recovered (FEC),
                 concealed (PLC), playback stalls, and the speaker's bandwidth and redundancy;
                 --record writes what the listener heard (48 kHz mono WAV) for a speech-quality
                 score (scripts/bench-pesq.sh); last line quality … wire_kbps=X
                 (latency and quality: the listener's jitter buffer measures the jitter, as every
                 call's does; --jitter-frames N puts a floor under its start depth)
        render   time to lay out and draw one call-screen frame (120×40, levels moving every frame)
                 and how many cells a frame rewrites; last line render_us median=X
        cpu      Opus encode, decode and mixing cost per stream, as a share of one core, for a
                 room of N speakers (you send 1 stream and receive N-1), then the whole receive
                 chain (RTP in, jitter buffers, decode, mix) per frame, with allocations per
                 packet when run with LD_PRELOAD=libcallroom-alloc-counter.so; then a real
                 two-party call (two `callroom join` processes, Opus 32 kb/s, a tone) for
                 --call-seconds (default 10; 0: none): each process's CPU by thread beside its
                 Opus time; last line client_cpu_pct=X [process_cpu_pct=Y codec_cpu_pct=Z]
                 (X: the codec model; Y: a client process in the call; Z: Opus inside it)
        udp-floor  the kernel's cost of sending one datagram to each of N loopback sockets, the
                 relay's way (sendmmsg) and one sendto each: the floor under the relay's CPU per
                 forwarded packet; last line udp_floor_us_per_datagram sendmmsg=X sendto=Y
        ring     ringing over real signalling against a running callroomd: initiateCall → the
                 callee's incoming and acceptCall → the caller's accepted, one call at a time
                 (--calls, default 100); with --simultaneous N, N calls rung at once (2N users
                 online), with the server's CPU and memory when --server-pid is given
        webhooks   webhook delivery through an in-process server to an in-process receiver: transition
                 → arrival delay and events/s for --calls (two events each); with --outage-calls, the
                 time a backlog takes to drain after the receiver comes back (an outage of at least
                 --outage-seconds) and how many requests the dead receiver got
        join       what joining costs a new client, one at a time (--joins, default 50): login, call
                 token, signalling connect + join; over https:// each pays its TLS handshake
        captions   each caption engine (--engine, default all three; Whisper and Moonshine where
                 installed; --threads: CPU threads per worker, default 1) on the
                 bundled speech clips and on LibriVox's read speech (--librivox, Debian's
                 pocketsphinx-testdata) after Opus as a session sends it (--bitrate, default the
                 voice profile's 48 kb/s; --pause-hint-ms: the silence after which the final
                 pass may start, 0 for none; --hangover-ms: the silence that ends an utterance;
                 --long-utterance-ms: after how long 400 ms ends one, 0 for never;
                 --max-utterance-ms: the longest one;
                 defaults: the engine's): word error rate, real-time factor (the
                 worker's CPU too), the final caption's delay after speech, the partials' interval,
                 memory per recogniser; one line per engine and corpus: captions engine=… wer=…
        mixdown    the recording's mixdown after a call: N participant files (default 10) of S
                 seconds of speech (default 60), mixed; mixdown cpu_ms_per_room_minute=…
                 memory_growth_kib=…
        video      VP8 encode/decode per frame at 160x90, 320x180, 640x360; the call screen's render
                 time with 4, 9 and 25 video tiles at 120x40 (every tile a new frame each render);
                 glass-to-glass latency through an in-process server (--seconds, default 10); last
                 line video encode_ms=… render25_ms=… glass_to_glass_ms=…
        peer-latency  a clicking, listening terminal participant in a room of an outside server for
                 --seconds (default 15); prints one JSON line: mouths_ms and ears_ms (wall clock,
                 ms since the epoch) for pairing with another participant's (a browser's) clicks

        """

    static func run(_ arguments: [String]) -> Never {
        guard let sub = arguments.first, ["latency", "quality", "cpu", "render", "udp-floor", "ring", "webhooks", "join", "captions", "video", "peer-latency", "mixdown"].contains(sub) else {
            guard let unknown = arguments.first, unknown != "--help" else {
                Console.out(usage)
                exit(ExitCode.ok)
            }
            // (Usage asked for is on stdout; a wrong word is said on stderr, with the usage.)
            Console.err("callroom bench: unknown benchmark '\(unknown)'\n" + usage)
            exit(ExitCode.usage)
        }
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments.dropFirst(), valued: ["frame-ms", "period-ms", "seconds", "jitter-frames", "loss", "jitter", "seed", "speakers", "frames", "participants", "layout", "input", "record", "destinations", "datagrams",
                                                                        "server", "auth-key", "calls", "simultaneous", "server-pid", "outage-calls", "outage-seconds", "call-seconds",
                                                                        "joins", "ca-file", "session", "language", "model-dir", "engine", "whisper-python", "whisper-model-dir", "moonshine-python", "moonshine-model-dir", "threads", "librivox", "pause-hint-ms", "hangover-ms", "long-utterance-ms", "max-utterance-ms", "whisper-threads", "complexity", "profile", "burst", "bitrate", "redundancy"],
                                       boolean: ["help", "insecure"])
        } catch { Console.fail(error.message) }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        func int(_ k: String, _ d: Int, _ r: ClosedRange<Int>) -> Int {
            guard let s = args[k] else { return d }
            guard let v = Int(s), r.contains(v) else { Console.fail("--\(k) must be \(r.lowerBound)…\(r.upperBound)") }
            return v
        }
        let profileName = args["profile"] ?? "voice"
        guard let profile = OpusEncoder.Profile(rawValue: profileName) else { Console.fail("--profile must be voice, music or low-delay") }
        switch sub {
        case "cpu":
            CPUBench.run(speakers: int("speakers", 10, 1...200), frames: int("frames", 500, 10...100_000),
                         callSeconds: int("call-seconds", 10, 0...600))
            exit(ExitCode.ok)
        case "ring":
            RingBench.run(args)
        case "join":
            JoinBench.run(args)
        case "peer-latency":
            PeerLatencyBench.run(args)
        case "mixdown":
            MixdownBench.run(participants: int("participants", 10, 1...100), seconds: int("seconds", 60, 1...3600))
            exit(ExitCode.ok)
        case "video":
            let seconds = int("seconds", 10, 2...600)
            Task { await VideoBench.run(seconds: seconds); exit(ExitCode.ok) }
        case "captions":
            CaptionBench.run(language: args["language"] ?? "en-US", modelRoot: args["model-dir"],
                             engines: (args["engine"] ?? "pocketsphinx,whisper,moonshine").split(separator: ",").map(String.init),
                             whisperPython: args["whisper-python"], whisperModelDir: args["whisper-model-dir"],
                             moonshinePython: args["moonshine-python"], moonshineModelDir: args["moonshine-model-dir"], librivox: args["librivox"] ?? "/usr/share/pocketsphinx/test/data/librivox",
                             bitrate: int("bitrate", OpusEncoder.Profile.voice.defaultBitrate, 6_000...510_000),
                             overrides: .init(pauseHintMs: args["pause-hint-ms"] == nil ? nil : int("pause-hint-ms", 0, 0...2_000),
                                              hangoverMs: args["hangover-ms"] == nil ? nil : int("hangover-ms", 0, 100...5_000),
                                              longUtteranceMs: args["long-utterance-ms"] == nil ? nil : int("long-utterance-ms", 0, 0...28_000),
                                              maxUtteranceMs: args["max-utterance-ms"] == nil ? nil : int("max-utterance-ms", 0, 1_000...28_000)),
                             workerThreads: int(args["threads"] == nil ? "whisper-threads" : "threads", 1, 1...16))
            exit(ExitCode.ok)
        case "webhooks":
            WebhookBench.run(calls: int("calls", 200, 1...100_000), outageCalls: int("outage-calls", 0, 0...100_000),
                             outageSeconds: int("outage-seconds", 0, 0...3600))
        case "udp-floor":
            UDPFloorBench.run(destinations: int("destinations", 9, 1...64), datagrams: int("datagrams", 1_000_000, 1000...100_000_000))
            exit(ExitCode.ok)
        case "render":
            guard let layout = LayoutType(rawValue: (args["layout"] ?? "tile").lowercased()) else {
                Console.fail("--layout must be TILE, SPOTLIGHT or SIDEBAR")
            }
            RenderBench.run(participants: int("participants", 10, 1...200), layout: layout, frames: int("frames", 1000, 10...1_000_000))
            exit(ExitCode.ok)
        case "latency":
            let ms = int("frame-ms", 20, 10...20)
            guard ms == 10 || ms == 20 else { Console.fail("--frame-ms must be 10 or 20") }
            let seconds = int("seconds", 10, 2...600), jf = int("jitter-frames", 1, 1...20)
            // Default: automatic, as every call gets it (SessionSettings.audioPeriodMs nil).
            let period: Int?
            do { period = try SurfaceFlags.playbackPeriod(args["period-ms"], frameMs: ms) } catch { Console.fail(error.message) }
            // Impaired: the listener drops and delays what it receives (as bench quality does);
            // its jitter buffer measures that jitter, as every call's does (--jitter-frames: a floor).
            let loss = Double(int("loss", 0, 0...100)), jitter = Double(int("jitter", 0, 0...1000))
            let impairment = loss > 0 || jitter > 0 ? NetworkImpairment(lossPercent: loss, jitterMs: jitter, seed: 1) : nil
            Task {
                await PipelineBench.latency(frameMs: ms, periodMs: period, seconds: seconds, jitterFrames: jf, impairment: impairment,
                                            profile: profile)
                exit(ExitCode.ok)
            }
        default:
            let loss = Double(int("loss", 5, 0...100)), jitter = Double(int("jitter", 30, 0...1000))
            let seconds = int("seconds", 10, 2...600), seed = UInt64(int("seed", 1, 0...Int.max))
            var input = "tone:440"
            if let path = args["input"] {
                do { _ = try SoundFile.readMono48k(path: path) } catch { Console.fail("--input: \(error)") }
                input = "file:" + path
            }
            var recorder: FileOutput?
            if let path = args["record"] {
                do { recorder = try FileOutput(path: path, frameSamples: 960, paced: false) } catch { Console.fail("--record: \(error)") }
            }
            let rec = recorder
            let complexity = int("complexity", 9, 0...10), bitrate = int("bitrate", profile.defaultBitrate, 6_000...510_000)
            let burst = args["burst"].map { _ in Double(int("burst", 1, 1...50)) }
            let redundancy: Bool
            switch args["redundancy"] ?? "on" {
            case "on": redundancy = true
            case "off": redundancy = false
            default: Console.fail("--redundancy must be on or off")
            }
            let period: Int?
            do { period = try SurfaceFlags.playbackPeriod(args["period-ms"], frameMs: 20) } catch { Console.fail(error.message) }
            let imp = NetworkImpairment(lossPercent: loss, jitterMs: jitter, seed: seed, burstLength: burst)
            let floor = int("jitter-frames", 1, 1...20)
            Task {
                await PipelineBench.quality(impairment: imp, seconds: seconds, input: input, recorder: rec, complexity: complexity,
                                            bitrate: bitrate, redundancy: redundancy, periodMs: period, profile: profile, jitterFrames: floor)
                exit(ExitCode.ok)
            }
        }
        dispatchMain()
    }
}

/// Runs two clients through an in-process server.
enum PipelineBench {
    struct Room {
        let server: CallServer
        let dir: String
        let url: URL
    }

    static func startServer() -> Room {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-bench-\(getpid())").path
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dir)
        c.logLevel = .error
        let s = CallServer(configuration: c)
        do { try s.start() } catch { Console.fail("cannot start the bench server: \(error)", code: ExitCode.failure) }
        guard let url = URL(string: s.url) else { Console.fail("bad server URL", code: ExitCode.failure) }
        return Room(server: s, dir: dir, url: url)
    }

    static func client(_ room: Room, uid: String, settings: SessionSettingsBuilder.SessionSettings, probe: (any MediaProbe)?) async -> CallsClient {
        let c = CallsClient(serverURL: room.url, appID: room.server.keys.appId, eventQueue: DispatchQueue(label: uid), mediaProbe: probe) { _ in }
        do {
            _ = try await c.login(uid: uid, authKey: room.server.keys.authKey)
            try await c.join(callToken: try await c.generateToken(sessionID: "bench"), settings: settings)
        } catch {
            Console.fail("bench client \(uid): \(error.errorDescription)", code: ExitCode.failure)
        }
        return c
    }

    static func percentile(_ xs: [Double], _ p: Double) -> Double {
        guard !xs.isEmpty else { return .nan }
        let s = xs.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
    }

    static func fmt(_ x: Double) -> String { String(format: "%.1f", x) }

    static func latency(frameMs: Int, periodMs: Int?, seconds: Int, jitterFrames: Int, impairment: NetworkImpairment? = nil,
                        profile: OpusEncoder.Profile = .voice) async {
        let room = startServer()
        let frameSamples = AudioFormat.samples(ms: frameMs)
        let mouth = MarkerInput(frameSamples: frameSamples)
        // The device's queue: the period asked for, or the automatic policy's first (the ear never under-runs).
        let queued = AudioFormat.samples(ms: PlaybackPeriodPolicy(frameMs: frameMs, fixedMs: periodMs, now: 0).periodMs)
        let ear = EarOutput(frameSamples: frameSamples, queuedSamples: queued)
        let speakerProbe = StageProbe(), listenerProbe = StageProbe()
        let listener = await client(room, uid: "ear", settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null")
            .setAudioFrameMs(frameMs).setAudioPeriodMs(periodMs).setJitterTargetFrames(jitterFrames).setNetworkImpairment(impairment).build(),
            probe: listenerProbe)
        // The listener's output is replaced by the ear (same pacing as a device).
        listener.replaceOutputForBenchmark(ear)
        let speaker = await client(room, uid: "mouth", settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("none")
            .setAudioFrameMs(frameMs).setAudioProfile(profile).build(), probe: speakerProbe)
        speaker.replaceInputForBenchmark(mouth)
        try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
        let chosen = listener.mediaReport
        await speaker.leave()
        await listener.leave()
        room.server.stop()
        try? FileManager.default.removeItem(atPath: room.dir)
        let periodText = "\(chosen?.playbackPeriodMs ?? periodMs ?? 0) ms \(periodMs == nil ? "(automatic)" : "(fixed)")"

        let mouths = mouth.mouthTimes.withLock { $0 }
        let ears = ear.earTimes.withLock { $0 }
        var total: [Double] = []
        var j = 0
        for m in mouths {
            while j < ears.count && ears[j] < m { j += 1 }
            guard j < ears.count, ears[j] - m < 400_000_000 else { continue }
            total.append(Double(ears[j] - m) / 1e6)
            j += 1
        }
        // Stages, matched by sequence number of each click's first frame.
        var capture: [Double] = [], encode: [Double] = [], network: [Double] = [], jitter: [Double] = []
        let spoken = speakerProbe.timings, heard = listenerProbe.timings
        let onsets = spoken.onsetSeq.sorted { $0.value < $1.value }
        let played = heard.playedAt
        for (seq, cap) in onsets {
            guard let sent = spoken.sentAt[seq], let recv = heard.receivedAt[seq],
                  let play = played.first(where: { $0 >= recv }) else { continue }
            // Signed: on loopback the packet can arrive before the sender's probe notes the send.
            func ms(_ from: UInt64, _ to: UInt64) -> Double { (Double(to) - Double(from)) / 1e6 }
            encode.append(ms(cap, sent))
            network.append(max(0, ms(sent, recv)))
            jitter.append(ms(recv, play))
        }
        let periodNs = UInt64(frameMs) * 1_000_000
        for (_, cap) in onsets {
            // The click was spoken inside the frame that ended at `cap`.
            if let m = mouths.last(where: { $0 <= cap && cap - $0 <= periodNs + 5_000_000 }) { capture.append(Double(cap - m) / 1e6) }
        }
        if ProcessInfo.processInfo.environment["CALLROOM_BENCH_DEBUG"] != nil {
            Console.err("mouths \(mouths.count) ears \(ears.count) onsets \(onsets.count) sent \(spoken.sentAt.count) received \(heard.receivedAt.count) played \(played.count) ear frames \(ear.frames.load(ordering: .relaxed)) silent \(ear.silentFrames.load(ordering: .relaxed))")
        }
        Console.out("callroom bench latency: \(frameMs) ms frames, \(periodText) playback period, jitter buffer start depth \(jitterFrames == 1 ? "measured" : "≥ \(jitterFrames)"), \(seconds) s, \(total.count) clicks, Opus \(profile.rawValue)" +
                    (impairment.map { ", impaired: \(Int($0.lossPercent)) % loss, 0…\(Int($0.jitterMs)) ms jitter" } ?? ""))
        Console.out("stage medians (ms): capture wait \(fmt(percentile(capture, 0.5))), encode+send \(fmt(percentile(encode, 0.5))), " +
                    "relay+network \(fmt(percentile(network, 0.5))), jitter buffer+playout wait \(fmt(percentile(jitter, 0.5))), " +
                    "playback period \(periodText); playout moved earlier \(chosen?.playoutAdvances ?? 0) times, \(chosen?.playoutAdvancedMs ?? 0) ms in all")
        Console.out("mouth_to_ear_ms median=\(fmt(percentile(total, 0.5))) p95=\(fmt(percentile(total, 0.95)))")
    }

    static func quality(impairment imp: NetworkImpairment, seconds: Int, input: String = "tone:440", recorder: FileOutput? = nil,
                        complexity: Int = 9, bitrate: Int = 48_000, redundancy: Bool = true, periodMs: Int? = nil,
                        profile: OpusEncoder.Profile = .voice, jitterFrames: Int = 1) async {
        let (loss, jitter, seed) = (imp.lossPercent, imp.jitterMs, imp.seed)
        let room = startServer()
        let ear = EarOutput(frameSamples: 960, queuedSamples: AudioFormat.samples(ms: PlaybackPeriodPolicy(frameMs: 20, fixedMs: periodMs, now: 0).periodMs),
                            recorder: recorder)
        let listener = await client(room, uid: "ear", settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null")
            .setNetworkImpairment(imp).setJitterTargetFrames(jitterFrames).setAudioPeriodMs(periodMs).build(), probe: nil)
        listener.replaceOutputForBenchmark(ear)
        let speaker = await client(room, uid: "voice", settings: SessionSettingsBuilder().setAudioInput(input).setAudioOutput("none")
            .setAudioComplexity(complexity).setAudioBitrate(bitrate).enableAudioRedundancy(redundancy).setAudioProfile(profile).build(), probe: nil)
        // What the speaker sends, sampled through the run: the redundancy it chose.
        var distances: [Int: Int] = [:]
        for _ in 0..<(seconds * 4) {
            try? await Task.sleep(nanoseconds: 250_000_000)
            distances[speaker.mediaReport?.redundancyFrames ?? 0, default: 0] += 1
        }
        let report = listener.mediaReport, sent = speaker.mediaReport
        ear.close()
        recorder?.close()
        await speaker.leave()
        await listener.leave()
        room.server.stop()
        try? FileManager.default.removeItem(atPath: room.dir)
        guard let r = report, let s = sent else { Console.fail("no media report", code: ExitCode.failure) }
        let decided = max(1, r.played + r.recovered + r.concealed)
        let frames = max(1, ear.frames.load(ordering: .relaxed))
        Console.out("callroom bench quality: \(input), loss \(loss) %" + (imp.burstLength.map { " in bursts of \($0) packets (mean)" } ?? "") +
                    ", jitter 0…\(Int(jitter)) ms (seed \(seed)), jitter buffer start depth \(jitterFrames == 1 ? "measured" : "≥ \(jitterFrames)"), \(seconds) s, Opus \(bitrate / 1000) kb/s" +
                    ", redundancy \(redundancy ? "on" : "off")")
        Console.out("packets received \(r.packetsReceived), dropped by impairment \(r.impairedDrops), late \(r.late); " +
                    "playout moved earlier \(r.playoutAdvances) times, \(r.playoutAdvancedMs) ms in all")
        Console.out("frames: played \(r.played) (of them repaired from a redundant copy \(r.repaired)), recovered from FEC \(r.recovered), " +
                    "concealed \(r.concealed), redundant copies too late \(r.lateRepairs); output frames \(frames), silent \(ear.silentFrames.load(ordering: .relaxed))")
        // Bandwidth as sent: payload, and on the wire (RTP 12 + level 8, SRTP tag 10, UDP 8, IPv4 20 per packet).
        let sentSeconds = Double(max(1, s.framesCaptured)) * 0.02
        let payloadKbps = Double(s.payloadBytesSent) * 8 / sentSeconds / 1000
        let wireKbps = Double(s.payloadBytesSent + s.packetsSent * 58) * 8 / sentSeconds / 1000
        let chosen = distances.sorted { $0.key < $1.key }.map { "\($0.key): \(100 * $0.value / max(1, seconds * 4)) %" }.joined(separator: ", ")
        Console.out(String(format: "sent: payload %.1f kb/s, on the wire %.1f kb/s; frames repeated per packet (share of the run) ", payloadKbps, wireKbps) + chosen)
        Console.out(String(format: "quality loss_pct=%.1f jitter_ms=%.0f recovered_pct=%.2f concealed_pct=%.2f repaired_pct=%.2f silent_output_pct=%.2f stalls=%d payload_kbps=%.1f wire_kbps=%.1f",
                           loss, jitter, 100 * Double(r.recovered) / Double(decided), 100 * Double(r.concealed) / Double(decided),
                           100 * Double(r.repaired) / Double(decided),
                           100 * Double(ear.silentFrames.load(ordering: .relaxed)) / Double(frames), ear.stalls.load(ordering: .relaxed),
                           payloadKbps, wireKbps))
    }
}

/// Opus and mixer cost per stream, measured in thread CPU time.
enum CPUBench {
    static func threadCPU() -> UInt64 { threadCPUNanoseconds() }

    static func run(speakers: Int, frames: Int, callSeconds: Int) {
        let n = 960
        var pcm = [Int16](repeating: 0, count: n)
        var packet = [UInt8](repeating: 0, count: 1500)
        let tones = (0..<speakers).map { ToneInput(frequency: 200 + Double($0) * 37, frameSamples: n) }
        guard let encoders = try? (0..<speakers).map({ _ in try OpusEncoder(frameMs: 20) }),
              let decoders = try? (0..<speakers).map({ _ in try OpusDecoder() }) else { Console.fail("cannot create codecs", code: ExitCode.failure) }
        var packets: [[[UInt8]]] = Array(repeating: [], count: speakers)
        var encodeNs: UInt64 = 0, decodeNs: UInt64 = 0, mixNs: UInt64 = 0
        for f in 0..<frames {
            for s in 0..<speakers {
                pcm.withUnsafeMutableBufferPointer { tones[s].fill($0) }
                let t0 = threadCPU()
                let len = (try? pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBufferPointer { try encoders[s].encode(p, into: $0) } }) ?? 0
                encodeNs += threadCPU() - t0
                if f < 50 || s < 4 { packets[s].append(Array(packet.prefix(len))) }
            }
        }
        let mixer = Mixer(frameSamples: n)
        var out = [Int16](repeating: 0, count: n)
        for f in 0..<frames {
            mixer.reset()
            for s in 0..<speakers {
                let p = packets[s][f % packets[s].count]
                let t0 = threadCPU()
                _ = p.withUnsafeBufferPointer { pp in pcm.withUnsafeMutableBufferPointer { decoders[s].decode(pp, into: $0) } }
                decodeNs += threadCPU() - t0
                let t1 = threadCPU()
                pcm.withUnsafeBufferPointer { mixer.add($0) }
                mixNs += threadCPU() - t1
            }
            let t2 = threadCPU()
            out.withUnsafeMutableBufferPointer { mixer.render(into: $0) }
            mixNs += threadCPU() - t2
        }
        let encUs = Double(encodeNs) / Double(frames * speakers) / 1000
        let decUs = Double(decodeNs) / Double(frames * speakers) / 1000
        let mixUs = Double(mixNs) / Double(frames) / 1000 * Double(max(1, speakers - 1)) / Double(speakers)
        let perFrameUs = encUs + Double(speakers - 1) * decUs + mixUs
        Console.out("callroom bench cpu: \(speakers) speakers, \(frames) frames of 20 ms, Opus 32 kb/s complexity 9 with FEC")
        Console.out(String(format: "per 20 ms frame: encode %.1f µs per sent stream, decode %.1f µs per received stream, mix %.1f µs", encUs, decUs, mixUs))
        Console.out(String(format: "share of one core: sent stream %.3f %%, each received stream %.3f %%", encUs / 200, decUs / 200))
        ReceivePathBench.run(senders: speakers - 1, frames: frames, streams: Array(packets.prefix(max(1, speakers - 1))))
        encoderTable(frames: frames)
        var last = String(format: "client_cpu_pct=%.2f", perFrameUs / 20_000 * 100)
        if callSeconds > 0 {
            let call = CallCPUBench.run(seconds: callSeconds)
            last += String(format: " process_cpu_pct=%.2f codec_cpu_pct=%.2f", call.processPct, call.codecPct)
        }
        Console.out(last)
    }

    /// Encode cost per 20 ms frame of a speech-like signal (the bundled clip when present, else a
    /// tone) by complexity: with FEC (the default, tuned for 5 % loss) at 32 kb/s (the baresip
    /// comparison's workload) and at 48 kb/s (the voice profile's default), without FEC, and the
    /// music profile (Opus' audio application) — the CPU half of choosing the encoder settings
    /// (scripts/bench-pesq.sh --complexity gives the quality half).
    static func encoderTable(frames: Int) {
        let n = 960
        let clip = (try? SoundFile.readMono48k(path: "Resources/clips/ada.wav")) ?? []
        let tone = ToneInput(frequency: 220, frameSamples: n)
        var pcm = [Int16](repeating: 0, count: n), packet = [UInt8](repeating: 0, count: 1500)
        Console.out("encoder (20 ms, \(clip.isEmpty ? "a 220 Hz tone" : "the ada.wav speech clip")): µs per frame")
        Console.out("complexity  voice+FEC@32k  voice+FEC@48k  voice@48k  music@48k")
        let columns: [(fec: Bool, profile: OpusEncoder.Profile, bitrate: Int32)] =
            [(true, .voice, 32_000), (true, .voice, 48_000), (false, .voice, 48_000), (false, .music, 48_000)]
        for c: Int32 in [0, 2, 4, 5, 6, 7, 8, 9, 10] {
            var row: [Double] = []
            for column in columns {
                guard let enc = try? OpusEncoder(frameMs: 20, bitrate: column.bitrate, complexity: c, fec: column.fec, profile: column.profile) else { continue }
                var ns: UInt64 = 0
                for f in 0..<frames {
                    if clip.count >= n {
                        let start = (f * n) % max(1, clip.count - n)
                        for i in 0..<n { pcm[i] = clip[start + i] }
                    } else {
                        pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
                    }
                    let t0 = threadCPU()
                    _ = try? pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBufferPointer { try enc.encode(p, into: $0) } }
                    ns += threadCPU() - t0
                }
                row.append(Double(ns) / Double(frames) / 1000)
            }
            guard row.count == columns.count else { continue }
            Console.out(String(format: "%10d  %13.1f  %13.1f  %9.1f  %9.1f", c, row[0], row[1], row[2], row[3]))
        }
    }
}

/// Render cost of the call screen, through the in-memory terminal (the same diffing the
/// ncurses driver does), with every tile's meter moving each frame.
enum RenderBench {
    static func run(participants: Int, layout: LayoutType, frames: Int) {
        var m = CallViewModel(title: "Render bench")
        var ps: [Participant] = []
        for i in 0..<participants {
            var p = Participant(uid: "u\(i)", name: "Participant \(i + 1)")
            p.pid = "p\(i)"
            p.isAudioMuted = i % 4 == 3
            ps.append(p)
        }
        m.apply(.sessionJoined, localPID: "p0")
        m.apply(.participantListChanged(participants: ps), localPID: "p0")
        for i in 0..<20 { m.apply(.participantJoined(participant: ps[i % participants]), localPID: "p0") }
        m.layout = layout
        m.dominantPID = "p1"
        let term = MemoryTerminal(width: 120, height: 40)
        var times: [Double] = []
        var cells = 0
        for f in 0..<frames {
            var levels: [String: Float] = [:]
            for i in 0..<participants { levels["p\(i)"] = -60 + Float((f * 7 + i * 13) % 60) }
            _ = m.updateLevels(levels)
            let t0 = monotonicNanoseconds()
            let buffer = CallScreenRenderer.render(m, width: 120, height: 40)
            cells += term.present(buffer)
            times.append(Double(monotonicNanoseconds() - t0) / 1000)
        }
        let sorted = times.sorted()
        Console.out("callroom bench render: \(participants) participants, \(layout.value) layout, 120×40, \(frames) frames")
        Console.out(String(format: "p95 %.1f µs; %.0f cells rewritten per frame on average", sorted[sorted.count * 95 / 100], Double(cells) / Double(frames)))
        Console.out(String(format: "render_us median=%.1f", sorted[sorted.count / 2]))
    }
}

import CallroomKit
import CallsAudio
import CallsCore
import CallsTransport
import CometChatCallsSDK
import Foundation

/// `callroom bench peer-latency --server URL --auth-key KEY --session ID [--seconds N]`: one
/// terminal participant (the SDK's real pipeline, as `callroom join` runs it) in a room of an
/// outside server, whose microphone clicks (`MarkerInput`: a 50 ms 1 kHz burst every 400 ms) and
/// whose speaker listens for clicks (`EarOutput`). It prints, as one JSON line, when each click
/// was spoken and when each click it heard reached the ear — wall-clock milliseconds since the
/// epoch, so another program on the same machine (a browser: scripts/bench_browser.py) can pair
/// them with its own: mouth-to-ear both ways between a terminal and anything else in the room.
enum PeerLatencyBench {
    static func run(_ args: ArgumentScanner) -> Never {
        guard let server = args["server"], let key = args["auth-key"], let session = args["session"], let url = URL(string: server) else {
            Console.fail("bench peer-latency needs --server URL, --auth-key KEY and --session ID")
        }
        guard let seconds = Int(args["seconds"] ?? "15"), (2...600).contains(seconds) else { Console.fail("--seconds must be 2…600") }
        let trust = TLSTrust(caFile: args["ca-file"], insecure: args.has("insecure"))
        Task {
            let app: String
            do throws(CometChatCallException) { app = try await SDKSetup.fetchAppID(server: url, trust: trust) } catch {
                Console.fail(error.errorDescription, code: ExitCode.failure)
            }
            let frameMs = 20, frameSamples = AudioFormat.samples(ms: frameMs)
            let mouth = MarkerInput(frameSamples: frameSamples)
            let queued = AudioFormat.samples(ms: PlaybackPeriodPolicy(frameMs: frameMs, fixedMs: nil, now: 0).periodMs)
            let ear = EarOutput(frameSamples: frameSamples, queuedSamples: queued)
            let c = CallsClient(serverURL: url, appID: app, eventQueue: DispatchQueue(label: "peer-latency"), trust: trust) { _ in }
            do throws(CometChatCallException) {
                _ = try await c.login(uid: "latency-peer", authKey: key)
                try await c.join(callToken: try await c.generateToken(sessionID: session),
                                 settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null").setAudioFrameMs(frameMs).build())
            } catch {
                Console.fail("peer-latency: \(error.errorDescription)", code: ExitCode.failure)
            }
            c.replaceOutputForBenchmark(ear)
            c.replaceInputForBenchmark(mouth)
            Console.err("peer-latency: joined \(session), clicking for \(seconds) s")
            try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
            await c.leave()
            // Monotonic → wall clock, by one reading of both.
            let offsetMs = Date().timeIntervalSince1970 * 1000 - Double(monotonicNanoseconds()) / 1e6
            func wall(_ xs: [UInt64]) -> [Double] { xs.map { (Double($0) / 1e6 + offsetMs).rounded(toPlaces: 2) } }
            let out: [String: Any] = ["mouths_ms": wall(mouth.mouthTimes.withLock { $0 }), "ears_ms": wall(ear.earTimes.withLock { $0 }),
                                      "playback_period_ms": Double(queued) / 48]
            guard let json = try? JSONSerialization.data(withJSONObject: out, options: [.sortedKeys]) else { exit(ExitCode.failure) }
            Console.out(String(decoding: json, as: UTF8.self))
            exit(ExitCode.ok)
        }
        dispatchMain()
    }
}

private extension Double {
    func rounded(toPlaces n: Int) -> Double {
        let p = pow(10, Double(n))
        return (self * p).rounded() / p
    }
}

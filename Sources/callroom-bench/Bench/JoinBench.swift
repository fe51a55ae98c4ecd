import CallroomKit
import CallsCore
import CallsTransport
import CometChatCallsSDK
import Foundation

/// `callroom bench join --server URL --auth-key KEY [--joins N] [--ca-file FILE | --insecure]`:
/// what joining costs a new client, one join at a time: log in (REST), a call token (REST), the
/// signalling WebSocket and `join` until `joined` — every step a new connection, so over
/// `https://` each pays its TLS handshake. Run against a plain and a TLS server in one sitting
/// (scripts/bench-tls.sh) for the ratio.
enum JoinBench {
    static func run(_ args: ArgumentScanner) -> Never {
        guard let server = args["server"], let key = args["auth-key"], let url = URL(string: server) else {
            Console.fail("bench join needs --server URL and --auth-key KEY")
        }
        let joins = Int(args["joins"] ?? "50") ?? 0
        guard (1...10_000).contains(joins) else { Console.fail("--joins 1…10000") }
        let trust = TLSTrust(caFile: args["ca-file"], insecure: args.has("insecure"))
        Task {
            let app: String
            do throws(CometChatCallException) { app = try await SDKSetup.fetchAppID(server: url, trust: trust) } catch {
                Console.fail(error.errorDescription, code: ExitCode.failure)
            }
            var login: [Double] = [], token: [Double] = [], join: [Double] = [], total: [Double] = []
            let settings = SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null").build()
            for i in 0..<joins {
                let c = CallsClient(serverURL: url, appID: app, eventQueue: DispatchQueue(label: "join\(i)"), trust: trust) { _ in }
                do throws(CometChatCallException) {
                    let t0 = monotonicNanoseconds()
                    _ = try await c.login(uid: "join-bench-\(i % 20)", authKey: key)
                    let t1 = monotonicNanoseconds()
                    let callToken = try await c.generateToken(sessionID: "join-bench-\(i)")
                    let t2 = monotonicNanoseconds()
                    try await c.join(callToken: callToken, settings: settings)
                    let t3 = monotonicNanoseconds()
                    login.append(Double(t1 - t0) / 1e6)
                    token.append(Double(t2 - t1) / 1e6)
                    join.append(Double(t3 - t2) / 1e6)
                    total.append(Double(t3 - t0) / 1e6)
                } catch {
                    Console.fail("join \(i): \(error.errorDescription)", code: ExitCode.failure)
                }
                await c.leave()
            }
            func line(_ what: String, _ xs: [Double]) -> String {
                String(format: "%@: p50 %.2f ms, p99 %.2f ms", what, PipelineBench.percentile(xs, 0.5), PipelineBench.percentile(xs, 0.99))
            }
            Console.out("callroom bench join: \(joins) joins, one at a time, each a new client (\(url.scheme ?? "?")://)")
            Console.out("   " + line("login (REST)", login))
            Console.out("   " + line("call token (REST)", token))
            Console.out("   " + line("signalling connect + join → joined", join))
            Console.out("   " + line("total", total))
            exit(ExitCode.ok)
        }
        dispatchMain()
    }
}

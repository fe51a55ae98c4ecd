import CallsCore
import CometChatCallsSDK
import Foundation

/// Runs synthetic participants through a scenario: each bot is a `CallsClient` that speaks a
/// bundled speech clip (or a tone when clips are not found) and performs its timeline steps.
@MainActor
package final class BotDirector {
    package nonisolated static let names = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Claude Shannon",
                        "Hedy Lamarr", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth", "Margaret Hamilton"]
    package nonisolated static let clips = ["ada", "grace", "alan", "kat", "claude"]

    package let serverURL: URL
    package let appID: String
    package let authKey: String
    package let sessionID: String
    package let count: Int
    package let scenario: Scenario
    private(set) var bots: [Int: CallsClient] = [:]
    /// Each bot's online device for ringing (made on its first ring action).
    private var devices: [Int: SignalDevice] = [:]
    private var stopped = false

    package init(serverURL: URL, appID: String, authKey: String, sessionID: String, count: Int, scenario: Scenario) {
        self.serverURL = serverURL
        self.appID = appID
        self.authKey = authKey
        self.sessionID = sessionID
        self.count = count
        self.scenario = scenario
    }

    /// Where the bundled clips and scenarios are: `$CALLROOM_RESOURCES`, next to the executable
    /// (`share/callroom`), or the source tree this binary was built from.
    package nonisolated static var resources: URL? {
        var candidates: [URL] = []
        if let e = ProcessInfo.processInfo.environment["CALLROOM_RESOURCES"] { candidates.append(URL(fileURLWithPath: e)) }
        if let exe = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("../share/callroom").standardized)
        }
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Resources").standardized)  // (Sources/callroom/Sessions/)
        return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("clips").path) }
    }

    /// Bot `bot`'s uid (`bot-3`), and the bot a uid names (nil: not a bot's).
    package nonisolated static func uid(_ bot: Int) -> String { "bot-\(bot)" }
    package nonisolated static func bot(ofUID uid: String) -> Int? { uid.hasPrefix("bot-") ? Int(uid.dropFirst(4)) : nil }

    /// Bot `bot`'s name: distinct whatever their number (the eleventh is "Ada Lovelace 2").
    package func name(_ bot: Int) -> String {
        let base = Self.names[(bot - 1) % Self.names.count], round = (bot - 1) / Self.names.count
        return round == 0 ? base : "\(base) \(round + 1)"
    }

    package func input(_ bot: Int) -> String {
        if let r = Self.resources {
            return "file:" + r.appendingPathComponent("clips/\(Self.clips[(bot - 1) % Self.clips.count]).wav").path
        }
        return "tone:\(220 + 110 * ((bot - 1) % 6)):700:500"
    }

    /// When the timeline started (its time zero; nil before).
    private(set) var startedAt: Date?

    /// Joins the bots that start in the room (the director's session, or `session`: the room of
    /// a call bot 1 placed) and schedules the timeline.
    package func start(in session: String? = nil) async {
        let absent = scenario.startsAbsent
        for bot in 1...max(1, count) where !absent.contains(bot) { await join(bot, session: session) }
        startedAt = Date()
        schedule(offset: 0)
    }

    private func schedule(offset: Double) {
        for step in scenario.steps where step.bot <= count {
            DispatchQueue.main.asyncAfter(deadline: .now() + offset + step.at) { [weak self] in
                MainActor.assumeIsolated { self?.perform(step) }
            }
        }
        if let period = scenario.repeatEvery {
            DispatchQueue.main.asyncAfter(deadline: .now() + offset + period) { [weak self] in
                MainActor.assumeIsolated { if self?.stopped == false { self?.schedule(offset: 0) } }
            }
        }
    }

    /// Joins `bot` to the director's session, or to `session` (the room of a call it is in).
    package func join(_ bot: Int, session: String? = nil) async {
        guard bots[bot] == nil, !stopped else { return }
        let sessionID = session ?? self.sessionID
        let client = CallsClient(serverURL: serverURL, appID: appID, eventQueue: DispatchQueue(label: "callroom.bot\(bot)")) { _ in }
        // A synthetic face, small (nobody sees a bot's tile larger than a terminal quarter).
        let settings = SessionSettingsBuilder().setSessionType(.video).setAudioInput(input(bot)).setAudioOutput("none")
            .setVideoSource("avatar").setVideoFormat(width: 160, height: 90, fps: 10, bitrateKbps: 120).build()
        do {
            _ = try await client.login(uid: Self.uid(bot), authKey: authKey, name: name(bot))
            try await client.join(callToken: try await client.generateToken(sessionID: sessionID), sessionID: sessionID, settings: settings)
            client.setVideoSubscriptions([])  // bots watch no one: no decoding for nothing
            bots[bot] = client
        } catch {
            Console.err("callroom: synthetic participant \(name(bot)) could not join: \(error.errorDescription)")
        }
    }

    /// The bot's online device (logged in as the bot, said hello).
    package func device(_ bot: Int) async -> SignalDevice? {
        if let d = devices[bot] { return d }
        do {
            let d = try await SignalDevice.online(serverURL, appID, authKey, Self.uid(bot), name: name(bot))
            devices[bot] = d
            return d
        } catch {
            Console.err("callroom: synthetic participant \(name(bot)) is not online: \(error.message)")
            return nil
        }
    }

    /// A ringing action on the bot's own device: the call it last received or placed.
    private func ring(_ step: Scenario.Step) async {
        guard let d = await device(step.bot) else { return }
        let calls = d.messages.compactMap { m -> (CallEventKind, WireCall)? in if case .call(let k, let c, _) = m { return (k, c) }; return nil }
        let last = { (kinds: Set<CallEventKind>) in calls.last { kinds.contains($0.0) }?.1.sessionId }
        switch step.action {
        case "call": d.send(.initiateCall(receiverId: step.text ?? "", receiverType: .user, type: .audio, timeoutSeconds: nil))
        case "accept": if let s = last([.incoming]) { d.send(.acceptCall(sessionId: s)) }
        case "reject": if let s = last([.incoming]) { d.send(.rejectCall(sessionId: s, status: .rejected)) }
        case "cancel": if let s = last([.initiated]) { d.send(.rejectCall(sessionId: s, status: .cancelled)) }
        case "end": if let s = last([.accepted]) { d.send(.endCall(sessionId: s)) }
        default: break
        }
    }

    private func perform(_ step: Scenario.Step) {
        guard !stopped else { return }
        if step.action == "join" { Task { await join(step.bot) }; return }
        if ["call", "accept", "reject", "cancel", "end"].contains(step.action) { Task { await ring(step) }; return }
        guard let c = bots[step.bot] else { return }
        switch step.action {
        case "leave":
            bots[step.bot] = nil
            Task { await c.leave() }
        case "mute": c.setAudioMuted(true)
        case "unmute": c.setAudioMuted(false)
        case "pause-video": c.setVideoPaused(true)
        case "resume-video": c.setVideoPaused(false)
        case "raise-hand": c.setHandRaised(true)
        case "lower-hand": c.setHandRaised(false)
        case "share-start": c.setPresenting(true)
        case "share-stop": c.setPresenting(false)
        case "record-start": c.setRecording(true)
        case "record-stop": c.setRecording(false)
        case "chat": c.sendChat(step.text ?? "")
        default: break
        }
    }

    /// Stops the timeline and takes every bot out of the room.
    package func stop() async {
        stopped = true
        for d in devices.values { d.close() }
        devices = [:]
        for c in bots.values { await c.leave() }
        bots = [:]
    }

    /// Loads `--scenario NAME|FILE`: a file path, a bundled name (`Resources/scenarios/NAME.scn`),
    /// or `random` (seeded).
    package nonisolated static func loadScenario(_ spec: String?, bots: Int, seed: UInt64) throws(Scenario.Invalid) -> Scenario {
        guard let spec, spec != "random" else { return .random(bots: bots, seed: seed) }
        var path = spec
        if !FileManager.default.fileExists(atPath: path), let r = resources {
            path = r.appendingPathComponent("scenarios/\(spec).scn").path
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Scenario.Invalid(message: "no scenario '\(spec)' (a file, 'random', or one of Resources/scenarios)")
        }
        return try Scenario.parse(text, name: spec)
    }
}

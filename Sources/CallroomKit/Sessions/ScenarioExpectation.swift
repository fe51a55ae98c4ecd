import CometChatCallsSDK
import Foundation

/// What a scenario says must happen, so a scenario is a CI test (`callroom demo --scenario F
/// --duration S --report out.xml`):
///
/// ```
/// expect 2..6 onParticipantHandRaised from 3        # the event, from bot 3, between 2 s and 6 s
/// expect 0..5 onChatMessage from 1 text=Thanks      # …with a field (top level or the participant's/message's)
/// expect at 14 3 hand-up                            # bot 3's state at 14 s
/// duration 40                                       # the run leaves after 40 s and reports
/// ```
/// Participants: a bot's number, or `you`. States: `hand-up`, `hand-down`, `muted`, `unmuted`,
/// `video-paused`, `video-on`, `presenting`, `not-presenting`, `present`, `absent`. Times count
/// from the scenario's start. A value; any thread.
package struct ScenarioExpectation: Equatable, Sendable {
    package enum State: String, CaseIterable, Sendable {
        case handUp = "hand-up", handDown = "hand-down", muted, unmuted, videoPaused = "video-paused", videoOn = "video-on"
        case presenting, notPresenting = "not-presenting", present, absent
    }

    package enum Kind: Equatable, Sendable {
        /// `callback` between `from` and `to` seconds, from `who` (a uid) when given, with
        /// `field` = `value` when given.
        case event(callback: String, from: Double, to: Double, who: String?, field: String?, value: String?)
        /// `who`'s state at `at` seconds.
        case state(at: Double, who: String, State)

        /// The participant it is about (a uid), if any.
        package var who: String? {
            switch self {
            case .event(_, _, _, let who, _, _): return who
            case .state(_, let who, _): return who
            }
        }
    }

    package var kind: Kind
    /// The line as written (the report names each expectation by it).
    package var text: String
    /// Its line in the scenario file.
    package var line: Int

    /// The uid of a participant written as a bot number or `you`.
    package static func uid(_ word: String) -> String? {
        if word == "you" { return "you" }
        guard let n = Int(word), (1...20).contains(n) else { return nil }
        return BotDirector.uid(n)
    }

    /// Parses the words after `expect`; nil with the reason when they are not an expectation.
    package static func parse(_ w: [String], text: String, line: Int) -> Result<ScenarioExpectation, ScenarioInvalidReason> {
        if w.first == "at" {
            guard w.count == 4, let t = Double(w[1]), t >= 0 else { return .failure(.init("expected: expect at SECONDS WHO STATE")) }
            guard let who = uid(w[2]) else { return .failure(.init("a participant is a bot number (1…20) or 'you', not '\(w[2])'")) }
            guard let state = State(rawValue: w[3]) else {
                return .failure(.init("unknown state '\(w[3])' (\(State.allCases.map(\.rawValue).joined(separator: ", ")))"))
            }
            return .success(.init(kind: .state(at: t, who: who, state), text: text, line: line))
        }
        guard w.count >= 2 else { return .failure(.init("expected: expect FROM..TO EVENT [from WHO] [FIELD=VALUE]")) }
        let window = w[0].components(separatedBy: "..")
        guard window.count == 2, let from = Double(window[0]), let to = Double(window[1]), from >= 0, to >= from else {
            return .failure(.init("a window is FROM..TO seconds (e.g. 2..6), not '\(w[0])'"))
        }
        let callback = w[1]
        guard CallEvent.callbackNames.contains(callback) else { return .failure(.init("unknown event '\(callback)' (a listener callback, e.g. onParticipantJoined)")) }
        var who: String?, field: String?, value: String?
        var rest = Array(w.dropFirst(2))
        if rest.first == "from" {
            guard rest.count >= 2, let u = uid(rest[1]) else { return .failure(.init("'from' takes a bot number or 'you'")) }
            who = u
            rest.removeFirst(2)
        }
        if let kv = rest.first {
            let parts = kv.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else { return .failure(.init("expected FIELD=VALUE, not '\(kv)'")) }
            field = parts[0]
            value = rest.count > 1 ? ([parts[1]] + rest.dropFirst()).joined(separator: " ") : parts[1]
        }
        return .success(.init(kind: .event(callback: callback, from: from, to: to, who: who, field: field, value: value), text: text, line: line))
    }
}

/// Why a scenario line was refused (the parser adds the file and line).
package struct ScenarioInvalidReason: Error, Equatable {
    package var message: String
    package init(_ m: String) { message = m }
}

/// Judges expectations against the events one participant (you) saw, on the scenario's clock.
/// Pure: fed events and times, no sockets or sleeps (tested on a virtual clock).
///
/// Thread rules: one thread (main, in the demo).
package struct ExpectationChecker {
    package struct Outcome: Equatable {
        package var expectation: ScenarioExpectation
        package var passed: Bool
        /// What was seen instead (a failure's reason).
        package var detail: String
    }

    private(set) var expectations: [ScenarioExpectation]
    private var verdicts: [Int: Outcome] = [:]
    /// Everyone as last seen (uid → participant).
    private var roster: [String: Participant] = [:]
    /// Every callback seen with its time (the failure messages list the nearest).
    private var seen: [(t: Double, callback: String, uid: String?)] = []

    package init(_ expectations: [ScenarioExpectation]) { self.expectations = expectations }

    /// One event at `t` seconds (call `advance(to:)` with `t` first).
    package mutating func observe(_ e: CallEvent, at t: Double) {
        let payload = e.payload
        let participant = payload["participant"] as? [String: Any]
        let uid = participant?["uid"] as? String ?? (payload["message"] as? [String: Any])?["uid"] as? String
        seen.append((t, e.callback, uid))  // (before the windows it closes: their failures name it)
        if seen.count > 10_000 { seen.removeFirst(seen.count - 10_000) }
        advance(to: t)
        switch e {
        case .participantListChanged(let ps):
            roster = Dictionary(ps.compactMap { p in p.uid.map { ($0, p) } }, uniquingKeysWith: { _, b in b })
        case .participantLeft(let p):
            if let u = p.uid { roster[u] = nil }
        default:
            if let p = Self.participant(of: e), let u = p.uid { roster[u] = p }
        }
        for (i, x) in expectations.enumerated() where verdicts[i] == nil {
            guard case .event(let callback, let from, let to, let who, let field, let value) = x.kind, callback == e.callback,
                  t >= from, t <= to else { continue }
            if let who, uid != who { continue }
            if let field, let value, !Self.matches(payload, field: field, value: value) { continue }
            verdicts[i] = Outcome(expectation: x, passed: true, detail: String(format: "at %.1f s", t))
        }
    }

    /// Time passes: states due by `t` are judged, event windows closed by `t` fail.
    package mutating func advance(to t: Double) {
        for (i, x) in expectations.enumerated() where verdicts[i] == nil {
            switch x.kind {
            case .state(let at, let who, let state) where t >= at:
                let (ok, actual) = Self.judge(state, roster[who])
                verdicts[i] = Outcome(expectation: x, passed: ok, detail: ok ? "" : "at \(Self.seconds(at)) s \(Self.name(who)) was \(actual)")
            case .event(let callback, let from, let to, let who, _, _) where t > to:
                let near = seen.filter { $0.callback == callback && (who == nil || $0.uid == who) }.map { Self.seconds($0.t) + " s" }
                let what = near.isEmpty ? "never seen" : "seen only at " + near.prefix(5).joined(separator: ", ")
                verdicts[i] = Outcome(expectation: x, passed: false, detail: "not seen between \(Self.seconds(from)) s and \(Self.seconds(to)) s (\(what))")
            default: break
            }
        }
    }

    /// Every expectation's outcome once the run is over at `t` (still open ones fail: the run
    /// ended before their time).
    package mutating func finish(at t: Double) -> [Outcome] {
        advance(to: t)
        return expectations.enumerated().map { i, x in
            verdicts[i] ?? Outcome(expectation: x, passed: false, detail: "the run ended at \(Self.seconds(t)) s, before its time")
        }
    }

    private static func seconds(_ t: Double) -> String { t == t.rounded() ? String(Int(t)) : String(format: "%.1f", t) }
    private static func name(_ uid: String) -> String { BotDirector.bot(ofUID: uid).map { "bot \($0)" } ?? uid }

    private static func judge(_ s: ScenarioExpectation.State, _ p: Participant?) -> (Bool, String) {
        guard let p else { return (s == .absent, "absent") }
        let hand = (p.raisedHandTimestamp ?? 0) > 0, muted = p.isAudioMuted ?? false, paused = p.isVideoPaused ?? false
        let presenting = p.isPresenting ?? false
        switch s {
        case .present: return (true, "present")
        case .absent: return (false, "present")
        case .handUp: return (hand, hand ? "hand up" : "hand down")
        case .handDown: return (!hand, hand ? "hand up" : "hand down")
        case .muted: return (muted, muted ? "muted" : "unmuted")
        case .unmuted: return (!muted, muted ? "muted" : "unmuted")
        case .videoPaused: return (paused, paused ? "video paused" : "video on")
        case .videoOn: return (!paused, paused ? "video paused" : "video on")
        case .presenting: return (presenting, presenting ? "presenting" : "not presenting")
        case .notPresenting: return (!presenting, presenting ? "presenting" : "not presenting")
        }
    }

    private static func participant(of e: CallEvent) -> Participant? {
        switch e {
        case .participantJoined(let p), .participantAudioMuted(let p), .participantAudioUnmuted(let p), .participantVideoPaused(let p),
             .participantVideoResumed(let p), .participantHandRaised(let p), .participantHandLowered(let p),
             .participantStartedScreenShare(let p), .participantStoppedScreenShare(let p): return p
        default: return nil
        }
    }

    /// Whether `field` (top level, or in the participant or message) reads as `value`.
    private static func matches(_ payload: [String: Any], field: String, value: String) -> Bool {
        var candidates: [Any] = []
        if let v = payload[field] { candidates.append(v) }
        for nest in ["participant", "message", "caption"] {
            if let d = payload[nest] as? [String: Any], let v = d[field] { candidates.append(v) }
        }
        return candidates.contains { "\($0)" == value || ($0 as? String)?.contains(value) == true }
    }
}

/// A run's outcomes as TAP (Test Anything Protocol, version 13) or JUnit XML.
package enum ExpectationReport {
    package static func tap(_ outcomes: [ExpectationChecker.Outcome], scenario: String) -> String {
        var out = ["TAP version 13", "1..\(outcomes.count)"]
        for (i, o) in outcomes.enumerated() {
            out.append("\(o.passed ? "ok" : "not ok") \(i + 1) - \(scenario):\(o.expectation.line) \(o.expectation.text)")
            if !o.passed { out.append("  # \(o.detail)") }
        }
        return out.joined(separator: "\n") + "\n"
    }

    package static func junit(_ outcomes: [ExpectationChecker.Outcome], scenario: String, seconds: Double) -> String {
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let failures = outcomes.filter { !$0.passed }.count
        var out = [#"<?xml version="1.0" encoding="UTF-8"?>"#,
                   #"<testsuite name="\#(esc(scenario))" tests="\#(outcomes.count)" failures="\#(failures)" time="\#(String(format: "%.1f", seconds))">"#]
        for o in outcomes {
            let name = esc("line \(o.expectation.line): \(o.expectation.text)")
            if o.passed {
                out.append(#"  <testcase classname="\#(esc(scenario))" name="\#(name)"/>"#)
            } else {
                out.append(#"  <testcase classname="\#(esc(scenario))" name="\#(name)"><failure message="\#(esc(o.detail))"/></testcase>"#)
            }
        }
        out.append("</testsuite>")
        return out.joined(separator: "\n") + "\n"
    }
}

import CallsCore
import Foundation

/// A timeline of synthetic-participant actions, from a scenario file:
///
/// ```
/// # comments and blank lines are ignored
/// repeat 60                 # optional: play the timeline again every 60 s
/// at 3   1 raise-hand       # at SECONDS BOT ACTION [ARGUMENTS…]; bots are numbered from 1
/// at 4.5 2 chat Hello all
/// at 9   3 leave
/// ```
/// Actions: join, leave, mute, unmute, pause-video, resume-video, raise-hand, lower-hand,
/// share-start, share-stop, record-start, record-stop, chat TEXT…; ringing: call USER, accept,
/// reject, cancel, end (the bot's own online device: the call it last received or placed).
/// A bot whose first action is
/// `join` starts outside the room. `random` (with a seed) generates a minute of everything.
/// `expect …` lines and `duration SECONDS` make it a test (`ScenarioExpectation`).
package struct Scenario: Equatable {
    package struct Step: Equatable {
        package var at: Double
        package var bot: Int
        package var action: String
        package var text: String?
    }

    package static let actions: Set<String> = ["join", "leave", "mute", "unmute", "pause-video", "resume-video", "raise-hand", "lower-hand",
                                       "share-start", "share-stop", "record-start", "record-stop", "chat",
                                       "call", "accept", "reject", "cancel", "end"]

    package var steps: [Step]
    package var repeatEvery: Double?
    /// What must happen (checked against what you see), and how long the run lasts.
    package var expectations: [ScenarioExpectation] = []
    package var duration: Double?

    /// Why a scenario was refused: the file, the line number and the reason.
    package struct Invalid: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    package static func parse(_ text: String, name: String = "scenario") throws(Invalid) -> Scenario {
        var steps: [Step] = []
        var rep: Double?
        var expectations: [ScenarioExpectation] = []
        var duration: Double?
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            if line.isEmpty { continue }
            let w = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            func bad(_ why: String) -> Invalid { Invalid(message: "\(name):\(n + 1): \(why)") }
            switch w[0] {
            case "expect":
                switch ScenarioExpectation.parse(Array(w.dropFirst()), text: w.dropFirst().joined(separator: " "), line: n + 1) {
                case .success(let x): expectations.append(x)
                case .failure(let why): throw bad(why.message)
                }
            case "duration":
                guard w.count == 2, let s = Double(w[1]), s > 0, s <= 3600 else { throw bad("duration takes a number of seconds (up to 3600)") }
                duration = s
            case "repeat":
                guard w.count == 2, let s = Double(w[1]), s > 0 else { throw bad("repeat takes a number of seconds") }
                rep = s
            case "at":
                guard w.count >= 4, let t = Double(w[1]), t >= 0 else { throw bad("expected: at SECONDS BOT ACTION") }
                guard let bot = Int(w[2]), bot >= 1, bot <= 20 else { throw bad("bots are numbered 1…20") }
                guard actions.contains(w[3]) else { throw bad("unknown action '\(w[3])'") }
                let text = w.count > 4 ? w[4...].joined(separator: " ") : nil
                if w[3] == "chat" && text == nil { throw bad("chat needs text") }
                if w[3] == "call" && (text == nil || w.count != 5) { throw bad("call needs one USER (a uid; 'you' in the demo)") }
                steps.append(Step(at: t, bot: bot, action: w[3], text: text))
            default:
                throw bad("expected 'at', 'repeat', 'expect' or 'duration', not '\(w[0])'")
            }
        }
        if let r = rep, let last = steps.map(\.at).max(), last >= r {
            throw Invalid(message: "\(name): every step must come before the repeat period (\(r) s)")
        }
        return Scenario(steps: steps.sorted { $0.at < $1.at }, repeatEvery: rep, expectations: expectations, duration: duration)
    }

    /// A minute in which `bots` participants exercise every visible state, from `seed`:
    /// turns of speech (dominant-speaker changes), hands, video, screen share, chat, a leave and
    /// a rejoin. The same seed gives the same timeline.
    package static func random(bots: Int, seed: UInt64) -> Scenario {
        var rng = SplitMix64(seed: seed)
        func pick(_ n: Int) -> Int { Int(rng.next() % UInt64(max(1, n))) + 1 }
        let lines = ["Can everyone hear me?", "Sharing my screen now.", "Good point.", "Let's take that offline.",
                     "I'll send the notes after.", "One more thing before we wrap up."]
        var s: [Step] = []
        // Turns: one speaker at a time for ~6 s each.
        for b in 1...max(1, bots) where b > 1 { s.append(Step(at: 0, bot: b, action: "mute")) }
        var speaker = 1
        for turn in 1..<10 {
            let t = Double(turn) * 6
            let next = bots > 1 ? (speaker % bots) + 1 : 1
            if next != speaker {
                s.append(Step(at: t, bot: speaker, action: "mute"))
                s.append(Step(at: t, bot: next, action: "unmute"))
            }
            speaker = next
        }
        let hand = pick(bots), share = pick(bots), video = pick(bots), chatter = pick(bots)
        s += [Step(at: 4, bot: hand, action: "raise-hand"), Step(at: 16, bot: hand, action: "lower-hand"),
              Step(at: 8, bot: video, action: "pause-video"), Step(at: 26, bot: video, action: "resume-video"),
              Step(at: 20, bot: share, action: "share-start"), Step(at: 38, bot: share, action: "share-stop"),
              Step(at: 12, bot: chatter, action: "chat", text: lines[Int(rng.next() % UInt64(lines.count))]),
              Step(at: 33, bot: pick(bots), action: "chat", text: lines[Int(rng.next() % UInt64(lines.count))])]
        if bots >= 2 {
            let leaver = pick(bots - 1) + 1
            s += [Step(at: 44, bot: leaver, action: "leave"), Step(at: 50, bot: leaver, action: "join")]
        }
        return Scenario(steps: s.sorted { $0.at < $1.at }, repeatEvery: 60)
    }

    /// Bots whose first step is `join` start outside the room.
    package var startsAbsent: Set<Int> {
        var first: [Int: String] = [:]
        for s in steps where first[s.bot] == nil { first[s.bot] = s.action }
        return Set(first.filter { $0.value == "join" }.keys)
    }
}

import CallsTUI
import CometChatCallsSDK
import Foundation

/// A demo run as a test: judges the scenario's `expect` lines against what you see, leaves
/// when its duration is over, prints what passed and failed on stderr, writes the report
/// (`--report FILE`: JUnit XML when FILE ends in `.xml`, else TAP) and turns the exit status
/// into 7 when any expectation failed.
///
/// Thread rules: main only.
@MainActor
package final class ScenarioRun {
    private static var current: ScenarioRun?
    private var checker: ExpectationChecker
    private let name: String
    private let report: String?
    private let zero: () -> Date?
    private var bridge: ListenerBridge?
    private var timer: DispatchSourceTimer?
    private var judged: Int32?

    /// Starts judging; `zero` is the timeline's start (the director's), `leave` ends the run.
    package static func start(scenario: Scenario, name: String, duration: Double?, report: String?, zero: @escaping () -> Date?,
                      leave: @escaping @MainActor () -> Void) {
        guard !scenario.expectations.isEmpty || duration != nil || report != nil else { return }
        let run = ScenarioRun(checker: ExpectationChecker(scenario.expectations), name: name, report: report, zero: zero)
        current = run
        let b = ListenerBridge { [weak run] e in
            DispatchQueue.main.async { MainActor.assumeIsolated { run?.checker.observe(e, at: run?.elapsed ?? 0) } }
        }
        b.register()
        run.bridge = b
        run.timer = MainTimer.every(.milliseconds(100)) { [weak run] in
            guard let run else { return }
            run.checker.advance(to: run.elapsed)
            if let d = duration, run.elapsed >= d { run.timer?.cancel(); run.timer = nil; leave() }
        }
    }

    private init(checker: ExpectationChecker, name: String, report: String?, zero: @escaping () -> Date?) {
        self.checker = checker
        self.name = name
        self.report = report
        self.zero = zero
    }

    /// Seconds on the scenario's clock (0 until the timeline starts).
    private var elapsed: Double { zero().map { max(0, Date().timeIntervalSince($0)) } ?? 0 }

    /// The exit status for a run that ended with `code`: 7 when an expectation failed (a
    /// failure to run at all keeps its own); `code` when no scenario is judged.
    package static func exitStatus(_ code: Int32) -> Int32 {
        guard let run = current else { return code }
        return run.judge(code)
    }

    private func judge(_ code: Int32) -> Int32 {
        if let judged { return judged }
        let t = elapsed
        let outcomes = checker.finish(at: t)
        let failed = outcomes.filter { !$0.passed }
        for o in failed { Console.err("callroom: FAILED \(name):\(o.expectation.line) expect \(o.expectation.text) — \(o.detail)") }
        Console.err("callroom: expectations: \(outcomes.count - failed.count) passed, \(failed.count) failed (\(name), \(Int(t)) s)")
        if let report {
            let text = report.hasSuffix(".xml") ? ExpectationReport.junit(outcomes, scenario: name, seconds: t)
                : ExpectationReport.tap(outcomes, scenario: name)
            if !FileManager.default.createFile(atPath: report, contents: Data(text.utf8)) { Console.err("callroom: cannot write the report \(report)") }
        }
        let status = code != 0 ? code : (failed.isEmpty ? 0 : ExitCode.expectationsFailed)
        judged = status
        return status
    }
}

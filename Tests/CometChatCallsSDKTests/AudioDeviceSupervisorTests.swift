import CallRoomTestSupport
import CallsAudio
import CallsCore
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Device loss and return on a virtual clock: a lost device gives way to silence (or a null
/// sink) at once, is reopened every `retrySeconds` until it opens, and nothing reopens after
/// `stop` — no sound card, no sleep.
final class AudioDeviceSupervisorTests: XCTestCase {
    final class Input: AudioInput, @unchecked Sendable {
        let name: String
        private let lock = NSLock()
        private var closedFlag = false
        init(_ name: String) { self.name = name }
        func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {}
        func close() { lock.withLock { closedFlag = true } }
        var closed: Bool { lock.withLock { closedFlag } }
    }

    final class Output: AudioOutput, @unchecked Sendable {
        let name: String
        private let lock = NSLock()
        private var closedFlag = false
        init(_ name: String) { self.name = name }
        func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {}
        func close() { lock.withLock { closedFlag = true } }
        var closed: Bool { lock.withLock { closedFlag } }
    }

    let clock = VirtualScheduler()
    let queue = DispatchQueue(label: "test.devices")
    let notices = EventRecorder<String>()
    /// Reopen attempts so far, and from which attempt the device opens.
    let attempts = Locked(0)
    let opensFrom = Locked(3)

    func supervisor(input: AudioInput, output: AudioOutput?, reopenInput: Bool = true) -> AudioDeviceSupervisor {
        let attempts = attempts, opensFrom = opensFrom, notices = notices
        let reopening: @Sendable () throws -> any AudioInput = {
            let n = attempts.withLock { $0 += 1; return $0 }
            guard n >= opensFrom.withLock({ $0 }) else { throw AudioError.deviceFailed(name: "dev", reason: "still unplugged") }
            return Input("mic-again")
        }
        let reopenIn: (@Sendable () throws -> any AudioInput)? = reopenInput ? reopening : nil
        return AudioDeviceSupervisor(
            input: input, output: output, frameSamples: 960,
            reopen: .init(input: reopenIn, output: { period in
                let n = attempts.withLock { $0 += 1; return $0 }
                guard n >= opensFrom.withLock({ $0 }) else { throw AudioError.deviceFailed(name: "dev", reason: "still unplugged") }
                return Output("speaker-\(period)ms")
            }, retrySeconds: 2),
            notice: { notices.add($0) }, scheduler: clock, queue: queue)
    }

    func testALostInputIsSilenceUntilItReopens() {
        let mic = Input("mic")
        let d = supervisor(input: mic, output: nil)
        d.inputLost(.deviceFailed(name: "dev", reason: "unplugged"))
        XCTAssertTrue(mic.closed)
        XCTAssertTrue(d.input is NullInput, "silence goes out at once")
        XCTAssertEqual(d.failures, 1)
        XCTAssertEqual(notices.all.first, "capture device mic lost (\(AudioError.deviceFailed(name: "dev", reason: "unplugged"))): sending silence until it returns")
        clock.advance(by: 1.9)
        XCTAssertEqual(attempts.withLock { $0 }, 0, "not before retrySeconds")
        clock.advance(by: 0.1)
        XCTAssertEqual(attempts.withLock { $0 }, 1)
        XCTAssertTrue(d.input is NullInput, "the first attempt failed")
        clock.advance(by: 4)
        XCTAssertEqual(attempts.withLock { $0 }, 3, "every 2 s")
        XCTAssertEqual(d.input.name, "mic-again", "back on the third attempt")
        XCTAssertEqual(notices.all.last, "capture device mic-again is back")
        clock.advance(by: 10)
        XCTAssertEqual(attempts.withLock { $0 }, 3, "no more attempts once it is back")
        XCTAssertEqual(clock.pendingCount, 0)
    }

    func testALostOutputReopensWithItsPeriodAndAnEngineWithoutOutputKeepsNone() {
        let speaker = Output("speaker")
        let d = supervisor(input: Input("mic"), output: speaker)
        opensFrom.withLock { $0 = 1 }
        d.outputLost(.deviceFailed(name: "dev", reason: "gone"), periodMs: 10)
        XCTAssertTrue(speaker.closed)
        XCTAssertTrue(d.output is NullOutput)
        clock.advance(by: 2)
        XCTAssertEqual(d.output?.name, "speaker-10ms", "reopened at the period it played with")

        let voiceless = supervisor(input: Input("mic"), output: nil)
        let offered = Output("offered")
        XCTAssertNil(voiceless.swapOutput(offered), "an engine that plays nothing takes no output")
        XCTAssertTrue(offered.closed)
        voiceless.outputLost(.deviceFailed(name: "dev", reason: "gone"), periodMs: 10)
        clock.advance(by: 10)
        XCTAssertNil(voiceless.output)
    }

    func testNothingReopensAfterStopAndWithoutAWayToReopenTheLossStays() {
        let d = supervisor(input: Input("mic"), output: Output("speaker"))
        d.inputLost(.deviceFailed(name: "dev", reason: "unplugged"))
        d.stop()
        clock.advance(by: 20)
        XCTAssertEqual(attempts.withLock { $0 }, 0, "a stopped engine tries nothing")
        XCTAssertTrue(d.input is NullInput)

        let fixed = supervisor(input: Input("file"), output: nil, reopenInput: false)
        fixed.inputLost(.deviceFailed(name: "dev", reason: "read error"))
        clock.advance(by: 20)
        XCTAssertTrue(fixed.input is NullInput, "nothing to reopen: silence for the rest of the call")
        XCTAssertEqual(clock.pendingCount, 0)
    }

    func testSwapsHandBackTheOldOutputOpenAndReplacementsCloseIt() {
        let first = Output("first"), second = Output("second"), third = Output("third")
        let d = supervisor(input: Input("mic"), output: first)
        let old = d.swapOutput(second)
        XCTAssertTrue(old === first)
        XCTAssertFalse(first.closed, "a swap hands the old one back open (the audio mode switch parks it)")
        d.replaceOutput(third)
        XCTAssertTrue(second.closed, "a replacement closes it")
        let mic = Input("mic"), other = Input("other")
        let e = supervisor(input: mic, output: nil)
        e.replaceInput(other)
        XCTAssertTrue(mic.closed)
        XCTAssertTrue(e.input === other)
    }
}

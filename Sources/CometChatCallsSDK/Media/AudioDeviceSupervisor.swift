import CallsAudio
import CallsCore
import Foundation
import Synchronization

/// The engine's audio devices, and what happens when one fails: the current input and output
/// (swapped at once by a mode change or a device switch), a lost device replaced by silence
/// (input) or a null sink (output) so the call goes on, and reopened every `retrySeconds` until
/// it is back — each step told through `notice`.
///
/// Thread rules: `input`/`output` from the media threads; `inputLost`/`outputLost` from the
/// thread whose read or write failed; replacements from any thread (a lock); retries run on
/// `queue` at the scheduler's times; `stop` from the owner, after which no retry reopens anything.
final class AudioDeviceSupervisor: Sendable {
    struct Reopen: Sendable {
        /// Opens the capture device again (nil: a lost input stays silent).
        var input: (@Sendable () throws -> any AudioInput)?
        /// Opens the playback device again with a period (ms) (nil: a lost output stays null).
        var output: (@Sendable (Int) throws -> any AudioOutput)?
        var retrySeconds: Double = 2
    }

    private let inputBox: Locked<any AudioInput>
    private let outputBox: Locked<(any AudioOutput)?>
    /// Whether this engine plays audio at all (an engine without output keeps none).
    let hasOutput: Bool
    private let frameSamples: Int
    private let reopen: Reopen
    private let notice: (@Sendable (String) -> Void)?
    private let scheduler: any Scheduler
    private let queue: DispatchQueue
    private let running = Atomic<Bool>(true)
    private let failureCount = Atomic<Int>(0)

    init(input: any AudioInput, output: (any AudioOutput)?, frameSamples: Int, reopen: Reopen,
         notice: (@Sendable (String) -> Void)?, scheduler: any Scheduler = DispatchScheduler(),
         queue: DispatchQueue = DispatchQueue(label: "callroom.devices", qos: .utility)) {
        inputBox = Locked(input)
        outputBox = Locked(output)
        hasOutput = output != nil
        self.frameSamples = frameSamples
        self.reopen = reopen
        self.notice = notice
        self.scheduler = scheduler
        self.queue = queue
    }

    var input: any AudioInput { inputBox.withLock { $0 } }
    var output: (any AudioOutput)? { outputBox.withLock { $0 } }
    /// Audio devices lost so far.
    var failures: Int { failureCount.load(ordering: .relaxed) }

    /// Moves capture to another input at once; closes the old one.
    func replaceInput(_ new: any AudioInput) {
        let old = inputBox.withLock { box -> any AudioInput in let o = box; box = new; return o }
        old.close()
    }

    /// Moves playback to another output at once; closes the old one. Nothing for an engine
    /// that plays nothing.
    func replaceOutput(_ new: any AudioOutput) { swapOutput(new)?.close() }

    /// Puts `new` in place of the playback endpoint and returns the old one, still open (an
    /// engine that plays nothing closes `new` and returns nil).
    func swapOutput(_ new: any AudioOutput) -> (any AudioOutput)? {
        guard hasOutput else { new.close(); return nil }
        return outputBox.withLock { box -> (any AudioOutput)? in let o = box; box = new; return o }
    }

    /// The capture device failed (`error`): silence goes out meanwhile, and it is reopened
    /// every `retrySeconds` until it opens.
    func inputLost(_ error: AudioError) {
        failureCount.add(1, ordering: .relaxed)
        let lost = input
        replaceInput(NullInput(frameSamples: frameSamples))
        notice?("capture device \(lost.name) lost (\(error)): sending silence until it returns")
        guard let open = reopen.input else { return }
        retry(open) { [weak self] input in
            self?.replaceInput(input)
            self?.notice?("capture device \(input.name) is back")
        }
    }

    /// The playback device failed (`error`) while playing with `periodMs`: a null sink plays
    /// meanwhile, and it is reopened with that period until it opens.
    func outputLost(_ error: AudioError, periodMs: Int) {
        failureCount.add(1, ordering: .relaxed)
        guard let lost = output else { return }
        replaceOutput(NullOutput(frameSamples: frameSamples))
        notice?("playback device \(lost.name) lost (\(error)): playing to null until it returns")
        guard let open = reopen.output else { return }
        retry({ try open(periodMs) }) { [weak self] output in
            self?.replaceOutput(output)
            self?.notice?("playback device \(output.name) is back")
        }
    }

    /// No more retries; closes both devices. Idempotent.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        input.close()
        output?.close()
    }

    /// Tries `open` every `retrySeconds` until it succeeds or `stop` (then `use`s what it opened).
    private func retry<T>(_ open: @escaping @Sendable () throws -> T, then use: @escaping @Sendable (T) -> Void) {
        _ = scheduler.schedule(after: reopen.retrySeconds, on: queue) { [weak self] in
            guard let self, self.running.load(ordering: .acquiring) else { return }
            guard let opened = try? open() else { return self.retry(open, then: use) }
            // Stopped while it was opening: it is not ours to keep.
            guard self.running.load(ordering: .acquiring) else {
                (opened as? any AudioInput)?.close()
                (opened as? any AudioOutput)?.close()
                return
            }
            use(opened)
        }
    }
}

/// Chooses the playback device period: the smallest one the device keeps up with. It starts at
/// the largest candidate no longer than a quarter of a frame (5 ms with 20 ms frames, 2 ms with
/// 10 ms frames: who asks for 10 ms frames asks for latency) and, when the device under-runs
/// `backOffXruns` times within `windowNanoseconds`, moves to the next larger one (5, 10, then
/// 20 ms; never more than a frame) — for good: a device that could not keep up once is not tried
/// again in this call. Under-runs
/// in the first `settleNanoseconds` after (re)opening are the start's, not the period's, and are
/// not counted. A fixed period (the user's `setAudioPeriodMs`) never moves.
///
/// Pure, on a clock the caller gives (tests use a virtual one). Thread rules: one owner (the
/// playback thread).
public struct PlaybackPeriodPolicy: Sendable {
    /// The periods a device is opened with (ms); any of them may also be fixed by the user.
    public static let candidatesMs = [2, 5, 10, 20]
    public let isAutomatic: Bool
    public private(set) var periodMs: Int
    /// Periods given up on, with the under-runs that made it.
    public private(set) var backOffs: [(fromMs: Int, xruns: Int)] = []
    let candidates: [Int]
    let backOffXruns: Int
    let windowNanoseconds: UInt64
    let settleNanoseconds: UInt64
    private var openedAt: UInt64
    private var lastCount: Int
    private var recent: [UInt64] = []

    /// - Parameters:
    ///   - frameMs: the audio frame (a period is never longer).
    ///   - fixedMs: a period the user chose (no automatic choice), or nil.
    ///   - now: the clock's time of the device's opening.
    public init(frameMs: Int, fixedMs: Int?, now: UInt64, backOffXruns: Int = 3,
                windowNanoseconds: UInt64 = 10_000_000_000, settleNanoseconds: UInt64 = 1_000_000_000) {
        let quarter = Self.candidatesMs.last { $0 * 4 <= frameMs } ?? Self.candidatesMs[0]
        candidates = Self.candidatesMs.filter { $0 >= quarter && $0 <= frameMs }.ifEmpty([frameMs])
        isAutomatic = fixedMs == nil
        periodMs = fixedMs.map { min($0, frameMs) } ?? candidates[0]
        self.backOffXruns = max(1, backOffXruns)
        self.windowNanoseconds = windowNanoseconds
        self.settleNanoseconds = settleNanoseconds
        openedAt = now
        lastCount = 0
    }

    /// The device's under-run count (as the device counts: since it was opened) at `now`.
    /// Returns the period to reopen the device with when it must move, else nil.
    public mutating func observe(xruns count: Int, now: UInt64) -> Int? {
        let new = max(0, count - lastCount)
        lastCount = max(lastCount, count)
        guard isAutomatic, new > 0, now &- openedAt >= settleNanoseconds else { return nil }
        recent += Array(repeating: now, count: new)
        recent.removeAll { now &- $0 > windowNanoseconds }
        guard recent.count >= backOffXruns, let i = candidates.firstIndex(of: periodMs), i + 1 < candidates.count else { return nil }
        backOffs.append((periodMs, recent.count))
        periodMs = candidates[i + 1]
        return periodMs
    }

    /// The device was reopened (with `periodMs`) at `now`: its count starts again.
    public mutating func reopened(now: UInt64) {
        openedAt = now
        lastCount = 0
        recent = []
    }
}

private extension Array {
    func ifEmpty(_ other: [Element]) -> [Element] { isEmpty ? other : self }
}

import CallsAudio
import CallsCore
import Foundation

/// The suite's one way to wait: for a condition, never for a fixed time. Polls `condition`
/// every `poll` seconds (10 ms) until it holds (true, at once) or `seconds` have passed (false).
@discardableResult
public func eventually(_ seconds: Double = 5, poll: Double = 0.01, _ condition: () throws -> Bool) rethrows -> Bool {
    try eventuallyValue(seconds, poll: poll) { try condition() ? true : nil } ?? false
}

/// `eventually` in an async test with a synchronous condition: Swift picks this one there (an
/// async overload wins in an async context), so the wait sleeps without holding one of the few
/// cooperative threads the code under test may need.
@discardableResult
public func eventually(_ seconds: Double = 5, poll: Double = 0.01, _ condition: () throws -> Bool) async rethrows -> Bool {
    try await eventually(seconds, poll: poll) { () async throws -> Bool in try condition() }
}

/// The first value `produce` gives (non-nil) within `seconds`, or nil.
public func eventuallyValue<T>(_ seconds: Double = 5, poll: Double = 0.01, _ produce: () throws -> T?) rethrows -> T? {
    let deadline = monotonicNanoseconds() + UInt64(max(0, seconds) * 1e9)
    while true {
        if let v = try produce() { return v }
        guard monotonicNanoseconds() < deadline else { return nil }
        Thread.sleep(forTimeInterval: poll)
    }
}

/// `eventuallyValue` for async tests: sleeps between looks without holding a cooperative thread.
public func eventuallyValue<T>(_ seconds: Double = 5, poll: Double = 0.01, _ produce: () async throws -> T?) async rethrows -> T? {
    let deadline = monotonicNanoseconds() + UInt64(max(0, seconds) * 1e9)
    while true {
        if let v = try await produce() { return v }
        guard monotonicNanoseconds() < deadline else { return nil }
        try? await Task.sleep(nanoseconds: UInt64(poll * 1e9))
    }
}

/// `eventuallyValue` in an async test with a synchronous `produce` (chosen there, as
/// `eventually`'s).
public func eventuallyValue<T>(_ seconds: Double = 5, poll: Double = 0.01, _ produce: () throws -> T?) async rethrows -> T? {
    try await eventuallyValue(seconds, poll: poll) { () async throws -> T? in try produce() }
}

/// `eventually` for async tests (sleeps without holding a thread).
@discardableResult
public func eventually(_ seconds: Double = 5, poll: Double = 0.01, _ condition: () async throws -> Bool) async rethrows -> Bool {
    try await eventuallyValue(seconds, poll: poll) { () async throws -> Bool? in try await condition() ? true : nil } ?? false
}

/// The suite's one event recorder: whatever a test observes (SDK callbacks, listener names,
/// server messages), in arrival order, from any thread; and the waits on it.
///
/// Thread rules: any thread.
public final class EventRecorder<Event: Sendable>: Sendable {
    private let events = Locked<[Event]>([])

    public init() {}

    public func add(_ e: Event) { events.withLock { $0.append(e) } }
    public var all: [Event] { events.withLock { $0 } }
    public func clear() { events.withLock { $0.removeAll() } }
    public func count(where match: (Event) -> Bool) -> Int { all.filter(match).count }

    /// The first recorded event (so far, or arriving within `seconds`) that matches.
    public func wait(_ seconds: Double = 5, _ match: (Event) -> Bool) -> Event? {
        eventuallyValue(seconds) { all.first(where: match) }
    }

    /// Whether `count` events matching `match` were recorded within `seconds`.
    public func wait(count: Int, _ seconds: Double = 5, _ match: (Event) -> Bool) -> Bool {
        eventually(seconds) { self.count(where: match) >= count }
    }

    /// `wait` in an async test (chosen there, as `eventually`'s): sleeps between looks without
    /// holding one of the few cooperative threads the code under test may need.
    public func wait(_ seconds: Double = 5, _ match: (Event) -> Bool) async -> Event? {
        await eventuallyValue(seconds) { () -> Event? in all.first(where: match) }
    }

    /// `wait(count:)` in an async test.
    public func wait(count: Int, _ seconds: Double = 5, _ match: (Event) -> Bool) async -> Bool {
        await eventually(seconds) { self.count(where: match) >= count }
    }
}

/// For what must not happen: whether `condition` holds for the whole of `seconds`, checked every
/// `poll` (false as soon as it fails — the window is watched, not only its end).
public func holds(for seconds: Double, poll: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicNanoseconds() + UInt64(max(0, seconds) * 1e9)
    while monotonicNanoseconds() < deadline {
        guard try condition() else { return false }
        Thread.sleep(forTimeInterval: poll)
    }
    return try condition()
}

/// `holds(for:)` in an async test with a synchronous condition (chosen there, as `eventually`'s):
/// the window passes without holding a thread.
public func holds(for seconds: Double, poll: Double = 0.02, _ condition: () throws -> Bool) async rethrows -> Bool {
    try await holds(for: seconds, poll: poll) { () async throws -> Bool in try condition() }
}

/// `holds(for:)` for async tests.
public func holds(for seconds: Double, poll: Double = 0.02, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = monotonicNanoseconds() + UInt64(max(0, seconds) * 1e9)
    while monotonicNanoseconds() < deadline {
        guard try await condition() else { return false }
        try? await Task.sleep(nanoseconds: UInt64(poll * 1e9))
    }
    return try await condition()
}

/// Synthetic traffic on the real clock, the one place tests pace it: calls `body` with 0, 1, 2…
/// every `interval` seconds (a talker's packet every 20 ms, a keep-alive every 50 ms) for
/// `duration` seconds, or until it returns false. Ticks are on absolute deadlines (the
/// synthetic endpoints' `Pacer`: a slow body does not stretch the stream). Not a wait: to wait
/// for something, use `eventually`.
public func paced(every interval: Double, for duration: Double, _ body: (Int) throws -> Bool) rethrows {
    let end = monotonicNanoseconds() + UInt64(max(0, duration) * 1e9)
    var pacer = Pacer(periodNanoseconds: UInt64(max(0, interval) * 1e9))
    var tick = 0
    while monotonicNanoseconds() < end {
        guard try body(tick) else { return }
        tick += 1
        pacer.wait()
    }
}

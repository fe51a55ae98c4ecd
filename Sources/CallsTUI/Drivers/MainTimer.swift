import Dispatch

/// A repeating timer on the main queue for a screen's redraws (`tick` polls input and draws).
/// Cancel it to stop. Main thread only.
@MainActor
public enum MainTimer {
    public static func every(_ interval: DispatchTimeInterval, _ tick: @escaping @MainActor () -> Void) -> DispatchSourceTimer {
        dispatchPrecondition(condition: .onQueue(.main))
        let t = DispatchSource.makeTimerSource(queue: .main)
        t.schedule(deadline: .now(), repeating: interval)
        t.setEventHandler { MainActor.assumeIsolated { tick() } }
        t.resume()
        return t
    }
}

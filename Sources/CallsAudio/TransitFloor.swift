/// The shortest transit (arrival time less RTP time) among a sender's recent packets: when its
/// packets come when nothing holds them up, against which one packet's delay is measured.
/// Kept over two windows of `window` packets (the floor is the smaller of the current and the
/// previous window's), so a path that got longer, or a sender clock drifting against ours,
/// moves it within two windows.
///
/// Pure (times are given). Thread rules: owned with its jitter buffer.
struct TransitFloor {
    let window: Int
    private var current = Double.infinity
    private var previous = Double.infinity
    private var count = 0

    init(window: Int) { self.window = max(1, window) }

    /// How much longer than the floor `transit` (ns) was — 0 at or under it — then counts it
    /// in. A jump of more than 5 s (a timestamp wrap, a restarted sender) starts over.
    mutating func delay(of transit: Double) -> Double {
        var floor = min(current, previous)
        if floor.isFinite, abs(transit - floor) > 5e9 {
            current = .infinity
            previous = .infinity
            count = 0
            floor = .infinity
        }
        let delay = floor.isFinite ? max(0, transit - floor) : 0
        current = min(current, transit)
        count += 1
        if count >= window {
            previous = current
            current = .infinity
            count = 0
        }
        return delay
    }
}

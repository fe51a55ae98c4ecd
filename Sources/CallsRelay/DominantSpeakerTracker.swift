/// Picks each room's dominant speaker from the RFC 6464 levels senders put in their RTP
/// headers, without decoding audio. A value: the relay keeps it behind a lock that its workers share.
///
/// Loudness is an exponential average of (127 − level) per packet; a sender that stopped
/// sending (muted) counts as silent after `staleNanoseconds`. Every `periodNanoseconds` each
/// room's loudest member above the speech threshold becomes a candidate; it takes over when it
/// stays the candidate for `confirmations` evaluations and is `marginDB` louder than the current
/// speaker (or the current one is silent). The last speaker stays dominant through silence.
package struct DominantSpeakerTracker {
    package struct Loudness { var energy: Double; var last: UInt64 }

    package var periodNanoseconds: UInt64 = 300_000_000
    package var staleNanoseconds: UInt64 = 400_000_000
    /// -50 dBov: quieter than this is not speech.
    package var threshold = 77.0
    package var marginDB = 6.0
    package var confirmations = 2

    private var loudness: [UInt64: Loudness] = [:]
    private var dominant: [Int: UInt64] = [:]
    private var candidate: [Int: (key: UInt64, count: Int)] = [:]
    private var lastEvaluation: UInt64 = 0

    package mutating func heard(_ key: UInt64, level: UInt8, now: UInt64) {
        let loud = 127 - Double(min(level, 127))
        var l = loudness[key] ?? Loudness(energy: loud, last: now)
        l.energy = 0.7 * l.energy + 0.3 * loud
        l.last = now
        loudness[key] = l
    }

    /// Forgets members that left (a room's dominant speaker among them included).
    package mutating func forget(_ keys: [UInt64]) {
        let gone = Set(keys)
        for k in keys { loudness[k] = nil }
        for (room, key) in dominant where gone.contains(key) { dominant[room] = nil }
        for (room, c) in candidate where gone.contains(c.key) { candidate[room] = nil }
    }

    private func effective(_ key: UInt64, now: UInt64) -> Double {
        // Levels come from several relay workers, so one may be stamped after `now`.
        guard let l = loudness[key], now < l.last || now - l.last < staleNanoseconds else { return 0 }
        return l.energy
    }

    /// Returns the rooms whose dominant speaker changed, or nil when it is not time yet.
    package mutating func evaluate(_ table: RelayTable, now: UInt64) -> [(Int, UInt64?)]? {
        guard now >= lastEvaluation, now - lastEvaluation >= periodNanoseconds else { return nil }
        lastEvaluation = now
        // A worker may still report a level of a member that has just left: such entries go
        // once they are long silent.
        if loudness.count > 64 {
            for (k, l) in loudness where l.last < now && now - l.last > 10 * staleNanoseconds { loudness[k] = nil }
        }
        var changes: [(Int, UInt64?)] = []
        for (room, members) in table.rooms {
            var best: (key: UInt64, energy: Double)?
            for k in members {
                let e = effective(k, now: now)
                if e > threshold && e > (best?.energy ?? 0) { best = (k, e) }
            }
            guard let b = best, b.key != dominant[room] else { candidate[room] = nil; continue }
            let current = dominant[room].map { effective($0, now: now) } ?? 0
            guard current <= threshold || b.energy >= current + marginDB else { candidate[room] = nil; continue }
            let count = candidate[room]?.key == b.key ? (candidate[room]?.count ?? 0) + 1 : 1
            candidate[room] = (b.key, count)
            if count >= confirmations {
                dominant[room] = b.key
                candidate[room] = nil
                changes.append((room, b.key))
            }
        }
        return changes
    }
}

import CallsSecurity

/// Who may send media and to whom. The room registry describes each change as a `RelayPatch`
/// (one room's new membership); the relay applies it to its canonical table and to each
/// worker's own copy, so a change costs the size of its room, never the size of the server.
/// A value; whoever holds one owns it.
package struct RelayTable: Sendable {
    package struct Member: Sendable, Equatable {
        package var key: UInt64
        package var room: Int
        package var ssrc: UInt32
        /// Checks its binds and consent responses (from its bind token); nil: it cannot bind.
        package var consent: MediaConsent?
        /// A moderator muted it: it still receives, but nothing it sends is forwarded.
        package var muted: Bool
        /// Its media goes over its signalling connection (this id on the node's web server),
        /// not UDP: it sends binary frames, and gets the room's packets the same way.
        package var tunnel: UInt64?
        /// Its video SSRC (0: it has none) and whether its video is paused (none forwarded).
        package var videoSSRC: UInt32 = 0
        package var videoPaused = false
        /// The members whose screens show its video (they subscribed): the only ones it goes to.
        package var videoSubscribers: Set<UInt64> = []

        package init(key: UInt64, room: Int, ssrc: UInt32, consent: MediaConsent? = nil, muted: Bool = false, tunnel: UInt64? = nil) {
            self.key = key
            self.room = room
            self.ssrc = ssrc
            self.consent = consent
            self.muted = muted
            self.tunnel = tunnel
        }

        /// What the relay does with a packet of `packetSSRC` from this member: forward it as its
        /// audio or its video, or drop it — another SSRC, a moderator's mute (the microphone), a
        /// paused camera. The one rule for the UDP workers and the over-signalling path.
        package func admission(of packetSSRC: UInt32) -> RelayAdmission {
            if packetSSRC == ssrc { return muted ? .muted : .forward(.audio) }
            if videoSSRC != 0 && packetSSRC == videoSSRC { return videoPaused ? .videoPaused : .forward(.video) }
            return .ssrcMismatch
        }

        /// Whether its packet of `kind` goes to member `other` (of the same room).
        @inline(__always) package func sendsTo(_ other: UInt64, _ kind: MediaStreamKind) -> Bool {
            kind == .audio || videoSubscribers.contains(other)
        }
    }

    package var members: [UInt64: Member] = [:]
    /// Member keys by SSRC (unique on the server): where a bind finds its member.
    package var bySSRC: [UInt32: UInt64] = [:]
    /// Member keys by their signalling connection, for members whose media goes over it.
    package var byTunnel: [UInt64: UInt64] = [:]
    /// Member keys per room index.
    package var rooms: [Int: [UInt64]] = [:]

    package static let empty = RelayTable()

    /// Replaces one room's membership with the patch's. Returns the keys that left the room
    /// (their bindings and levels are to be forgotten). Costs the room's old and new size.
    @discardableResult
    package mutating func apply(_ patch: RelayPatch) -> [UInt64] {
        let incoming = Set(patch.members.map(\.key))
        var removed: [UInt64] = []
        for k in rooms[patch.room] ?? [] {
            if let m = members[k], bySSRC[m.ssrc] == k { bySSRC[m.ssrc] = nil }
            if let t = members[k]?.tunnel, byTunnel[t] == k { byTunnel[t] = nil }
            if !incoming.contains(k) {
                members[k] = nil
                removed.append(k)
            }
        }
        for m in patch.members {
            members[m.key] = m
            bySSRC[m.ssrc] = m.key
            if let t = m.tunnel { byTunnel[t] = m.key }
        }
        rooms[patch.room] = patch.members.isEmpty ? nil : patch.members.map(\.key)
        return removed
    }
}

/// A member's two streams: audio goes to the whole room, video only to its subscribers.
package enum MediaStreamKind: Sendable { case audio, video }

/// A member's packet at the relay: forwarded (as which stream), or why it is dropped.
package enum RelayAdmission: Sendable, Equatable {
    case forward(MediaStreamKind)
    case ssrcMismatch, muted, videoPaused
}

/// One room's membership after a change (join, leave, resume with a new bind token); an empty
/// list removes the room. What the room registry hands the relay.
package struct RelayPatch: Sendable, Equatable {
    package var room: Int
    package var members: [RelayTable.Member]
    package init(room: Int, members: [RelayTable.Member]) { self.room = room; self.members = members }
}

import CallsCore

extension RoomCore {
    /// The least time between one participant's offers.
    static let offerIntervalMs: Int64 = 250

    /// A browser's `webrtcOffer`: its participant's media go through the WebRTC gateway from
    /// now on — a tunnelled member of the relay, as a client whose UDP is blocked is — and the
    /// gateway answers with the room's senders it can receive.
    func webrtcOffer(_ room: Room, _ pid: String, sdp: String, connection: ConnectionID) {
        guard webrtcAvailable else {
            return fail(connection, .webrtcOfferRefused, "This server has no WebRTC gateway (webrtcPort is off).", close: false)
        }
        guard let me = room.participants[pid] else { return }
        // A page offers once per change and waits for each answer; four a second is plenty.
        guard me.lastOfferAt == .min || now - me.lastOfferAt >= Self.offerIntervalMs else {
            return fail(connection, .webrtcOfferRefused, "Too many offers: at most one every \(Self.offerIntervalMs) ms.", close: false)
        }
        room.participants[pid]?.lastOfferAt = now
        if !me.viaWebRTC {
            room.participants[pid]?.mediaOverSignalling = true
            room.participants[pid]?.viaWebRTC = true
            patchRelay(room)
            log(.info, "media through the WebRTC gateway", ["session": room.sessionId, "pid": pid])
        }
        let senders = room.admitted.filter { $0.wire.pid != pid }.map { WebRTCOfferRequest.Sender(pid: $0.wire.pid, key: $0.wireKey) }
        effects.append(.webrtcOffer(WebRTCOfferRequest(connection: connection, tunnel: Self.webrtcTunnel(me.key), session: room.sessionId, pid: pid, ownKey: me.wireKey,
                                                       senders: senders, sdp: sdp)))
    }
}

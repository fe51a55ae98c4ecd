import CallsCore

extension RoomCore {
    /// A browser's `webrtcOffer`: its participant's media go through the WebRTC gateway from
    /// now on — a tunnelled member of the relay, as a client whose UDP is blocked is — and the
    /// gateway answers with the room's senders it can receive.
    func webrtcOffer(_ room: Room, _ pid: String, sdp: String, connection: ConnectionID) {
        guard webrtcAvailable else {
            return fail(connection, .webrtcOfferRefused, "This server has no WebRTC gateway (webrtcPort is off).", close: false)
        }
        guard let me = room.participants[pid] else { return }
        if !me.mediaOverSignalling {
            room.participants[pid]?.mediaOverSignalling = true
            patchRelay(room)
            log(.info, "media through the WebRTC gateway", ["session": room.sessionId, "pid": pid])
        }
        let senders = room.admitted.filter { $0.wire.pid != pid }.map { WebRTCOfferRequest.Sender(pid: $0.wire.pid, key: $0.wireKey) }
        effects.append(.webrtcOffer(WebRTCOfferRequest(connection: connection, session: room.sessionId, pid: pid, ownKey: me.wireKey,
                                                       senders: senders, sdp: sdp)))
    }
}

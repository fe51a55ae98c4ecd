import CallsCore

/// Video: who shows whose tiles (subscriptions, which the relay follows) and keyframe requests
/// (a new subscriber, or a receiver that lost frames, asks the sender for one).
extension RoomCore {
    /// Replaces `pid`'s subscriptions with `pids` (itself and pids not in the room left out).
    /// Each newly subscribed sender is asked for a keyframe, so the new tile draws at once.
    func subscribeVideo(_ room: Room, _ pid: String, _ pids: [String], connection: ConnectionID) {
        guard pids.count <= limits.maxParticipants else {
            return fail(connection, .badMessage, "subscribeVideo names at most \(limits.maxParticipants) participants.", close: false)
        }
        guard let me = room.participants[pid] else { return }
        let wanted = Set(pids.filter { $0 != pid && room.participants[$0]?.admitted == true && room.participants[$0]?.wire.videoSsrc != nil })
        guard wanted != me.videoSubscriptions else { return }
        let added = wanted.subtracting(me.videoSubscriptions)
        room.participants[pid]?.videoSubscriptions = wanted
        patchRelay(room)
        for s in added.sorted() { if let c = room.participants[s]?.connection { send(.keyframeRequest(fromPid: pid), to: c) } }
    }

    /// Passes a keyframe request to `target` when `pid` shows its video (anyone else's request
    /// would only cost the sender bits).
    func requestKeyframe(_ room: Room, from pid: String, of target: String) {
        guard room.participants[pid]?.videoSubscriptions.contains(target) == true,
              let c = room.participants[target]?.connection else { return }
        send(.keyframeRequest(fromPid: pid), to: c)
    }
}

/// Weak references to listeners of one protocol. Listeners are held weakly, as documented:
/// a listener with no other owner is released and stops receiving callbacks.
struct WeakList<T> {
    private var boxes: [(id: ObjectIdentifier, ref: () -> AnyObject?)] = []

    mutating func add(_ l: AnyObject) {
        let id = ObjectIdentifier(l)
        boxes.removeAll { $0.id == id || $0.ref() == nil }
        boxes.append((id, { [weak l] in l }))
    }

    mutating func remove(_ l: AnyObject) {
        let id = ObjectIdentifier(l)
        boxes.removeAll { $0.id == id || $0.ref() == nil }
    }

    mutating func removeAll() { boxes.removeAll() }

    /// The live listeners, in registration order.
    var live: [T] { boxes.compactMap { $0.ref() as? T } }

    func forEach(_ body: (T) -> Void) { live.forEach(body) }
}

/// The five listener lists of a `CallSession`. Confined to the callback queue's callers under
/// the session's lock; copied before delivery so a listener may add or remove listeners.
struct ListenerSet {
    var session = WeakList<any SessionStatusListener>()
    var media = WeakList<any MediaEventsListener>()
    var participant = WeakList<any ParticipantEventListener>()
    var layout = WeakList<any LayoutListener>()
    var button = WeakList<any ButtonClickListener>()
    var callRoom = WeakList<any CallRoomListener>()
}

import CometChatCallsSDK
import Foundation

/// A 1:1 call is over when the other person is gone: once someone else has been in the session
/// and the roster is down to your own devices again (they left, or the server gave up on their
/// connection after its resume grace), `onAlone` runs once — the ringing client then leaves and
/// ends the call, as the ringing flow asks of both sides (docs/sdk.md, "Ringing"). Without it a
/// callee whose caller's process died sat alone in the call until they left by hand.
///
/// Thread rules: registered for the SDK callback queue, which must be main (the terminal's);
/// enforced.
@MainActor
package final class PeerDepartureWatch: ParticipantEventListener {
    private let myUID: String
    private let onAlone: @MainActor () -> Void
    private var peerSeen = false
    private var fired = false

    package init(myUID: String, onAlone: @escaping @MainActor () -> Void) {
        self.myUID = myUID
        self.onAlone = onAlone
    }

    package nonisolated func onParticipantListChanged(participants: [Participant]) {
        dispatchPrecondition(condition: .onQueue(.main))
        MainActor.assumeIsolated { rosterChanged(participants) }
    }

    package func rosterChanged(_ participants: [Participant]) {
        let others = participants.filter { $0.uid != myUID && $0.isJoined != false }
        if !others.isEmpty { peerSeen = true; return }
        guard peerSeen, !fired else { return }
        fired = true
        onAlone()
    }
}

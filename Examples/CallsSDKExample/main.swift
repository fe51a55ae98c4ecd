// An app written against the documented headless calls API, in its documented style:
// init → login → listeners → joinSession → actions → leave. It builds against CallRoom's
// `CometChatCallsSDK` unchanged (UIKit aside: the container is nil, so it runs headless).
//
// Usage: CallsSDKExample SETTINGS_FILE UID AUTH_KEY SESSION_ID
import CometChatCallsSDK
import Foundation

final class CallViewController: SessionStatusListener, ParticipantEventListener, MediaEventsListener, LayoutListener {
    let uid: String
    let authKey: String
    let sessionID: String

    init(uid: String, authKey: String, sessionID: String) {
        self.uid = uid
        self.authKey = authKey
        self.sessionID = sessionID
    }

    func start(settingsFile: String) {
        CometChatCalls.initFromSettings(path: settingsFile, onSuccess: { _ in
            CometChatCalls.login(UID: self.uid, authKey: self.authKey, onSuccess: { user in
                print("logged in as \(user.name)")
                self.join()
            }, onError: { error in
                print("login failed: \(error.errorCode)")
                exit(1)
            })
        }, onError: { error in
            print("init failed: \(error?.errorCode ?? "?")")
            exit(1)
        })
    }

    func join() {
        // Register listeners BEFORE joining.
        CallSession.shared.addSessionStatusListener(self)
        CallSession.shared.addParticipantEventListener(self)
        CallSession.shared.addMediaEventsListener(self)
        CallSession.shared.addLayoutListener(self)
        let settings = CometChatCalls.sessionSettingsBuilder
            .setTitle("Example")
            .setSessionType(.voice)
            .setLayout(.tile)
            .setAudioInput("tone:523")
            .setAudioOutput("null")
            .build()
        CometChatCalls.generateToken(sessionID: sessionID, onSuccess: { token in
            guard let token else { return }
            CometChatCalls.joinSession(callToken: token, callSetting: settings, container: nil, onSuccess: { id in
                print("joinSession succeeded: \(id)")
            }, onError: { error in
                print("join failed: \(error?.errorCode ?? "?")")
                exit(1)
            })
        }, onError: { error in
            print("token failed: \(error?.errorCode ?? "?")")
            exit(1)
        })
    }

    // MARK: SessionStatusListener
    func onSessionJoined() {
        print("onSessionJoined")
        CallSession.shared.muteAudio()
    }

    func onSessionLeft() {
        print("onSessionLeft")
        CallSession.shared.clearAllListeners()
        exit(0)
    }

    // MARK: MediaEventsListener
    func onAudioMuted() {
        print("onAudioMuted")
        CallSession.shared.setLayout("SPOTLIGHT")
    }

    // MARK: LayoutListener
    func onCallLayoutChanged(layoutType: LayoutType) {
        print("onCallLayoutChanged \(layoutType.value)")
        CallSession.shared.raiseHand()
    }

    // MARK: ParticipantEventListener
    func onParticipantListChanged(participants: [Participant]) {
        print("onParticipantListChanged \(participants.compactMap(\.uid).joined(separator: ","))")
    }

    func onParticipantHandRaised(participant: Participant) {
        print("onParticipantHandRaised \(participant.uid ?? "?")")
        CallSession.shared.leaveSession()
    }
}

let args = CommandLine.arguments
guard args.count == 5 else {
    FileHandle.standardError.write(Data("usage: CallsSDKExample SETTINGS_FILE UID AUTH_KEY SESSION_ID\n".utf8))
    exit(2)
}
let controller = CallViewController(uid: args[2], authKey: args[3], sessionID: args[4])
controller.start(settingsFile: args[1])
dispatchMain()

// A 1:1 ringing call written against the documented API, in its documented order:
// Chat init → Chat login → Calls init → Calls login → addCallListener → initiateCall.
// Once the call is accepted both ends join the call's session with the calls SDK (the same
// session id: one call), talk for a moment, and the caller ends it (leaveSession + endCall).
//
// Usage: RingingExample SETTINGS_FILE UID AUTH_KEY call RECEIVER_UID [SECONDS]
//        RingingExample SETTINGS_FILE UID AUTH_KEY answer accept|reject|busy
// With VOIP_TOKEN=HEX in the environment, the answering side registers that PushKit token after
// logging in (as an iOS app does in pushRegistry(_:didUpdate:for:)), and removes it after a
// reject (as on didInvalidatePushTokenFor).
import CometChatCallsSDK
import CometChatSDK
import Foundation

/// One line on stdout, written at once (not buffered: whoever reads it sees it as it happens).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

final class CallController: CometChatCallDelegate, SessionStatusListener {
    let uid: String
    let authKey: String
    let role: String
    let argument: String
    let talkSeconds: Double
    var sessionID = ""

    init(uid: String, authKey: String, role: String, argument: String, talkSeconds: Double) {
        self.uid = uid
        self.authKey = authKey
        self.role = role
        self.argument = argument
        self.talkSeconds = talkSeconds
    }

    func start(settingsFile: String) {
        CometChat.initFromSettings(path: settingsFile, onSuccess: { _ in
            CometChat.login(UID: self.uid, authKey: self.authKey, onSuccess: { user in
                say("chat: logged in as \(user.name)")
                CometChatCalls.initFromSettings(path: settingsFile, onSuccess: { _ in
                    CometChatCalls.login(UID: self.uid, authKey: self.authKey, onSuccess: { _ in
                        CometChat.addCallListener("example", self)
                        if self.role == "call" { self.placeCall() } else { self.registerVoIPToken { say("waiting for a call") } }
                    }, onError: { self.fail("calls login", $0.errorCode) })
                }, onError: { self.fail("calls init", $0?.errorCode) })
            }, onError: { self.fail("chat login", $0.errorCode) })
        }, onError: { self.fail("chat init", $0?.errorCode) })
    }

    let voipToken = ProcessInfo.processInfo.environment["VOIP_TOKEN"]

    func registerVoIPToken(then: @escaping () -> Void) {
        guard let token = voipToken else { return then() }
        CometChat.registerTokenForPushNotification(token: token) { _ in
            say("VoIP token registered")
            then()
        } onError: { self.fail("registerTokenForPushNotification", $0?.errorCode) }
    }

    func placeCall() {
        let call = Call(receiverId: argument, callType: .audio, receiverType: .user)
        CometChat.initiateCall(call: call, timeout: 20, onSuccess: { outgoing in
            self.sessionID = outgoing.sessionID
            say("initiateCall succeeded: \(outgoing.sessionID) status=\(outgoing.callStatus.rawValue)")
        }, onError: { self.fail("initiateCall", $0?.errorCode) })
    }

    func fail(_ what: String, _ code: String?) {
        say("\(what) failed: \(code ?? "?")")
        exit(1)
    }

    // MARK: CometChatCallDelegate
    func onIncomingCallReceived(incomingCall: Call?, error: CometChatException?) {
        guard let call = incomingCall else { return }
        say("onIncomingCallReceived from \(call.callInitiator?.name ?? "?") \(call.callType.rawValue)")
        switch argument {
        case "accept":
            CometChat.acceptCall(sessionID: call.sessionID, onSuccess: { accepted in
                say("acceptCall succeeded: status=\(accepted.callStatus.rawValue)")
                say("getActiveCall: \(CometChat.getActiveCall()?.sessionID ?? "none")")
                self.join(accepted)
            }, onError: { self.fail("acceptCall", $0?.errorCode) })
        case "busy", "reject":
            CometChat.rejectCall(sessionID: call.sessionID, status: argument == "busy" ? .busy : .rejected, onSuccess: { rejected in
                say("rejectCall succeeded: status=\(rejected.callStatus.rawValue)")
                guard let token = self.voipToken else { exit(0) }
                CometChat.unregisterTokenForPushNotification(token: token) { _ in
                    say("VoIP token removed")
                    exit(0)
                } onError: { self.fail("unregisterTokenForPushNotification", $0?.errorCode) }
            }, onError: { self.fail("rejectCall", $0?.errorCode) })
        default:
            fail("answer", argument)
        }
    }

    func onOutgoingCallAccepted(acceptedCall: Call, error: CometChatException?) {
        say("onOutgoingCallAccepted status=\(acceptedCall.callStatus.rawValue)")
        join(acceptedCall)
    }

    func onOutgoingCallRejected(rejectedCall: Call?, error: CometChatException?) {
        say("onOutgoingCallRejected status=\(rejectedCall?.callStatus.rawValue ?? "?")")
        exit(0)
    }

    func onIncomingCallCancelled(canceledCall: Call?, error: CometChatException?) {
        say("onIncomingCallCancelled status=\(canceledCall?.callStatus.rawValue ?? "?")")
        exit(0)
    }

    func onCallEndedMessageReceived(endedCall: Call?, error: CometChatException?) {
        say("onCallEndedMessageReceived status=\(endedCall?.callStatus.rawValue ?? "?")")
        say("getActiveCall: \(CometChat.getActiveCall()?.sessionID ?? "none")")
        CallSession.shared.leaveSession()
    }

    // MARK: The session both ends join
    func join(_ call: Call) {
        let session = call.sessionID
        sessionID = session
        CallSession.shared.addSessionStatusListener(self)
        // Call.callType maps to the calls SDK's SessionType (.audio → .voice).
        let settings = CometChatCalls.sessionSettingsBuilder.setSessionType(call.callType.sessionType).setAudioInput("tone:440").setAudioOutput("null").build()
        CometChatCalls.generateToken(sessionID: session, onSuccess: { token in
            guard let token else { return }
            CometChatCalls.joinSession(callToken: token, callSetting: settings, container: nil, onSuccess: { id in
                say("joinSession succeeded: \(id)")
            }, onError: { self.fail("joinSession", $0?.errorCode) })
        }, onError: { self.fail("generateToken", $0?.errorCode) })
    }

    func onSessionJoined() {
        say("onSessionJoined \(sessionID)")
        guard role == "call" else { return }
        let session = sessionID
        DispatchQueue.main.asyncAfter(deadline: .now() + talkSeconds) {
            // Ending needs both: leave the session and end the call.
            CallSession.shared.leaveSession()
            CometChat.endCall(sessionID: session, onSuccess: { _ in say("endCall succeeded") },
                              onError: { say("endCall: \($0?.errorCode ?? "?")") })
        }
    }

    func onSessionLeft() {
        say("onSessionLeft")
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) { exit(0) }
    }
}

let args = CommandLine.arguments
guard args.count >= 6, ["call", "answer"].contains(args[4]) else {
    FileHandle.standardError.write(Data("""
        usage: RingingExample SETTINGS_FILE UID AUTH_KEY call RECEIVER_UID [SECONDS]
               RingingExample SETTINGS_FILE UID AUTH_KEY answer accept|reject|busy

        """.utf8))
    exit(2)
}
let controller = CallController(uid: args[2], authKey: args[3], role: args[4], argument: args[5],
                                talkSeconds: args.count > 6 ? Double(args[6]) ?? 2 : 2)
controller.start(settingsFile: args[1])
dispatchMain()

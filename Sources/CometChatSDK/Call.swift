import CallsCore
import CometChatCallsSDK
import Foundation

/// Someone or something a call is between: a `User` or a `Group`.
public class AppEntity: @unchecked Sendable {
    public let name: String
    init(name: String) { self.name = name }
}

/// A user of the app.
public final class User: AppEntity, @unchecked Sendable {
    public let uid: String
    public let avatar: String?
    public init(uid: String, name: String, avatar: String? = nil) {
        self.uid = uid
        self.avatar = avatar
        super.init(name: name)
    }
}

/// A group of users (`guid`).
public final class Group: AppEntity, @unchecked Sendable {
    public let guid: String
    public init(guid: String, name: String) {
        self.guid = guid
        super.init(name: name)
    }
}

/// A ringing call: `Call(receiverId:callType:receiverType:)` to place one; the SDK fills in the
/// rest as the call goes on. Values are snapshots; safe to pass between threads.
public final class Call: @unchecked Sendable {
    public let receiverUid: String
    public let callType: CometChat.CallType
    public let receiverType: CometChat.ReceiverType
    /// The room both ends join (`CometChatCalls.generateToken(sessionID:)`); empty until initiated.
    public internal(set) var sessionID: String = ""
    public internal(set) var callStatus: CometChat.callStatus = .initiated
    public internal(set) var callInitiator: AppEntity?
    public internal(set) var callReceiver: AppEntity?
    /// Seconds since the epoch.
    public internal(set) var initiatedAt: Double = 0
    public internal(set) var joinedAt: Double = 0
    public internal(set) var endedAt: Double = 0
    /// Per member of the receiving side: their outcome (`accepted`, `rejected`, …).
    public internal(set) var memberOutcomes: [String: String] = [:]

    public init(receiverId: String, callType: CometChat.CallType, receiverType: CometChat.ReceiverType) {
        receiverUid = receiverId
        self.callType = callType
        self.receiverType = receiverType
    }

    init(_ w: WireCall) {
        receiverUid = w.receiver.id
        callType = w.type == .video ? .video : .audio
        receiverType = w.receiverType == .group ? .group : .user
        sessionID = w.sessionId
        callStatus = CometChat.callStatus(w.status)
        callInitiator = User(uid: w.initiator.id, name: w.initiator.name)
        callReceiver = w.receiverType == .group ? Group(guid: w.receiver.id, name: w.receiver.name) : User(uid: w.receiver.id, name: w.receiver.name)
        initiatedAt = Double(w.initiatedAt) / 1000
        joinedAt = w.startedAt.map { Double($0) / 1000 } ?? 0
        endedAt = w.endedAt.map { Double($0) / 1000 } ?? 0
        memberOutcomes = Dictionary(uniqueKeysWithValues: w.members.map { ($0.uid, $0.outcome.rawValue) })
    }

    /// The uid of whoever placed the call.
    var initiatorUid: String? { (callInitiator as? User)?.uid }
}

/// The error every failing chat-side call reports: a documented code and a text.
public final class CometChatException: Error, Sendable, CustomStringConvertible {
    public let errorCode: String
    public let errorDescription: String
    public init(errorCode: String, errorDescription: String) {
        self.errorCode = errorCode
        self.errorDescription = errorDescription
    }
    public var description: String { "\(errorCode): \(errorDescription)" }

    static let notInitialized = "ERR_NOT_INITIALIZED"
    static let notLoggedIn = "ERR_NOT_LOGGED_IN"
    static let networkError = "NETWORK_ERROR"
    static let timedOut = "ERR_TIMEOUT"
}

/// Ringing-call events (`CometChat.addCallListener`). Every method has an empty default.
/// Called on the SDK callback queue (main unless the settings say otherwise).
public protocol CometChatCallDelegate: AnyObject {
    func onIncomingCallReceived(incomingCall: Call?, error: CometChatException?)
    func onOutgoingCallAccepted(acceptedCall: Call, error: CometChatException?)
    func onOutgoingCallRejected(rejectedCall: Call?, error: CometChatException?)
    func onIncomingCallCancelled(canceledCall: Call?, error: CometChatException?)
    func onCallEndedMessageReceived(endedCall: Call?, error: CometChatException?)
}

extension CometChatCallDelegate {
    public func onIncomingCallReceived(incomingCall: Call?, error: CometChatException?) {}
    public func onOutgoingCallAccepted(acceptedCall: Call, error: CometChatException?) {}
    public func onOutgoingCallRejected(rejectedCall: Call?, error: CometChatException?) {}
    public func onIncomingCallCancelled(canceledCall: Call?, error: CometChatException?) {}
    public func onCallEndedMessageReceived(endedCall: Call?, error: CometChatException?) {}
}

extension CometChat.CallType {
    /// The calls SDK's session type for this call: `.audio` → `.voice`, `.video` → `.video`
    /// (`CometChatCalls.sessionSettingsBuilder.setSessionType(call.callType.sessionType)`).
    public var sessionType: SessionType { self == .video ? .video : .voice }
}

/// The chat connection's state, as the vendor SDK's connection listener reports it: after a
/// loss (server restart, a dead node, the network) the SDK reconnects by itself and says so.
/// Called on the callback queue.
public protocol CometChatConnectionDelegate: AnyObject {
    /// Reconnecting after a loss.
    func connecting()
    /// Back: calls ring here again.
    func connected()
    /// The connection was lost (a reconnect follows).
    func disconnected()
    /// Reconnecting stopped: the server refused the session's token (revoked or expired).
    func onConnectionError(error: CometChatException)
}

extension CometChatConnectionDelegate {
    public func connecting() {}
    public func connected() {}
    public func disconnected() {}
    public func onConnectionError(error: CometChatException) {}
}

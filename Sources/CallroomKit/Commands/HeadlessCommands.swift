import CometChatCallsSDK
import Foundation

/// The stdin commands of `callroom join --headless`: one per `CallSession.shared` action, named
/// in kebab-case, with space-separated arguments. A bad command prints a JSON error line and
/// changes nothing.
package enum HeadlessCommands {
    package enum Arity { case none, one(String), two(String, String), text }

    package struct Command {
        package let name: String
        package let arity: Arity
        package let help: String
        package let run: @MainActor ([String]) -> Void
    }

    package static let shortForms = ["mute": "mute-audio", "unmute": "unmute-audio", "leave": "leave-session",
                             "enable-picture-in-picture": "enable-picture-in-picture-layout",
                             "disable-picture-in-picture": "disable-picture-in-picture-layout"]

    @MainActor package static let all: [Command] = {
        let s = CallSession.shared
        return [
            Command(name: "mute-audio", arity: .none, help: "mute your microphone (short: mute)") { _ in s.muteAudio() },
            Command(name: "unmute-audio", arity: .none, help: "unmute it (short: unmute)") { _ in s.unmuteAudio() },
            Command(name: "leave-session", arity: .none, help: "leave and exit (short: leave)") { _ in s.leaveSession() },
            Command(name: "pause-video", arity: .none, help: "pause your video") { _ in s.pauseVideo() },
            Command(name: "resume-video", arity: .none, help: "resume your video") { _ in s.resumeVideo() },
            Command(name: "switch-camera", arity: .none, help: "front ↔ rear camera") { _ in s.switchCamera() },
            Command(name: "set-audio-mode", arity: .one("MODE"), help: "SPEAKER, EARPIECE, BLUETOOTH or HEADPHONES") { a in s.setAudioMode(a[0]) },
            Command(name: "set-layout", arity: .one("LAYOUT"), help: "TILE, SPOTLIGHT or SIDEBAR") { a in s.setLayout(a[0]) },
            Command(name: "raise-hand", arity: .none, help: "raise your hand") { _ in s.raiseHand() },
            Command(name: "lower-hand", arity: .none, help: "lower it") { _ in s.lowerHand() },
            Command(name: "start-recording", arity: .none, help: "ask the server to record") { _ in s.startRecording() },
            Command(name: "stop-recording", arity: .none, help: "ask the server to stop recording") { _ in s.stopRecording() },
            Command(name: "start-transcription", arity: .none, help: "ask the server to transcribe") { _ in s.startTranscription() },
            Command(name: "stop-transcription", arity: .none, help: "ask it to stop transcribing") { _ in s.stopTranscription() },
            Command(name: "start-streaming", arity: .none, help: "ask the server to stream") { _ in s.startStreaming() },
            Command(name: "stop-streaming", arity: .none, help: "ask it to stop streaming") { _ in s.stopStreaming() },
            Command(name: "pin-participant", arity: .one("ID"), help: "pin a participant (pid or uid; moderators)") { a in s.pinParticipant(participantId: a[0]) },
            Command(name: "unpin-participant", arity: .none, help: "remove the pin (moderators)") { _ in s.unpinParticipant() },
            Command(name: "mute-participant", arity: .one("ID"), help: "mute a participant (moderators)") { a in s.muteParticipant(participantId: a[0]) },
            Command(name: "allow-unmute", arity: .one("ID"), help: "let a participant you muted unmute (moderators)") { a in
                s.allowParticipantToUnmute(participantId: a[0])
            },
            Command(name: "lock-room", arity: .none, help: "nobody new may join (moderators)") { _ in s.lockRoom() },
            Command(name: "unlock-room", arity: .none, help: "let people join again (moderators)") { _ in s.unlockRoom() },
            Command(name: "admit", arity: .one("ID"), help: "let someone waiting in the lobby in (their pid; moderators)") { a in s.admitFromLobby(participantId: a[0]) },
            Command(name: "deny", arity: .one("ID"), help: "send someone waiting in the lobby away (moderators)") { a in s.denyFromLobby(participantId: a[0]) },
            Command(name: "ban", arity: .one("UID"), help: "ban a user from the room for good (moderators)") { a in s.setBan(uid: a[0], banned: true) },
            Command(name: "unban", arity: .one("UID"), help: "lift a user's ban (moderators)") { a in s.setBan(uid: a[0], banned: false) },
            Command(name: "allow-rejoin", arity: .one("UID"), help: "let a user removed from this session join again (moderators)") { a in s.allowRejoin(uid: a[0]) },
            Command(name: "pause-participant-video", arity: .one("ID"), help: "pause a participant's video (moderators)") { a in s.pauseParticipantVideo(participantId: a[0]) },
            Command(name: "remove-participant", arity: .one("ID"), help: "remove a participant (moderators)") { a in s.removeParticipant(participantId: a[0]) },
            Command(name: "enable-picture-in-picture-layout", arity: .none, help: "compact layout (short: enable-picture-in-picture)") { _ in s.enablePictureInPictureLayout() },
            Command(name: "disable-picture-in-picture-layout", arity: .none, help: "back to the full layout (short: disable-picture-in-picture)") { _ in s.disablePictureInPictureLayout() },
            Command(name: "set-chat-button-unread-count", arity: .one("N"), help: "the chat button's badge") { a in s.setChatButtonUnreadCount(Int(a[0]) ?? 0) },
            Command(name: "hide-settings-panel", arity: .none, help: "hide the settings panel") { _ in s.hideSettingsPanel() },
            Command(name: "push-to-talk", arity: .one("on|off"), help: "send the microphone only while talking") { a in s.setPushToTalk(a[0] == "on") },
            Command(name: "talk-start", arity: .none, help: "push-to-talk key down") { _ in s.setTalking(true) },
            Command(name: "talk-stop", arity: .none, help: "push-to-talk key up") { _ in s.setTalking(false) },
            Command(name: "set-volume", arity: .two("ID", "GAIN"), help: "a participant's playback volume (0…4, 1 = as received)") { a in
                s.setParticipantVolume(participantId: a[0], volume: Float(a[1]) ?? 1)
            },
            Command(name: "send-chat", arity: .text, help: "send TEXT to the room's chat") { a in s.sendChatMessage(a.joined(separator: " ")) },
            Command(name: "is-call-session-active", arity: .none, help: "prints {\"isCallSessionActive\": …}") { _ in
                printJSON(["isCallSessionActive": s.isCallSessionActive()])
            },
            Command(name: "invite-link", arity: .none,
                    help: "prints {\"inviteLink\": …, \"guestInvite\": true}: a guest invite to share (no account, no key); "
                        + "the session's plain link with \"guestInvite\": false and a \"reason\" when none could be made") { _ in
                Task { @MainActor in
                    switch await s.shareableLink() {
                    case .guestInvite(let link): printJSON(["inviteLink": link, "guestInvite": true])
                    case .sessionLink(let link, let reason): printJSON(["inviteLink": link, "guestInvite": false, "reason": reason])
                    case nil: printJSON(["inviteLink": NSNull()])
                    }
                }
            },
            Command(name: "participants", arity: .none, help: "prints the roster") { _ in
                printJSON(["participants": s.participants.map(\.jsonObject)])
            },
            Command(name: "connection-quality", arity: .none, help: "prints each participant's connection quality (yours: the worst your receivers report)") { _ in
                printJSON(["connectionQuality": s.connectionQuality().mapValues(\.rawValue)])
            },
            Command(name: "media-report", arity: .none, help: "prints the media counters (sent, received, played, concealed, bound …)") { _ in
                guard let r = s.mediaReport else { return printJSON(["mediaReport": NSNull()]) }
                printJSON(["mediaReport": ["framesCaptured": r.framesCaptured, "packetsSent": r.packetsSent, "packetsReceived": r.packetsReceived,
                                           "played": r.played, "recovered": r.recovered, "concealed": r.concealed, "late": r.late, "delayed": r.delayed,
                                           "lost": r.lost, "repaired": r.repaired, "bound": r.bound, "srtpRejected": r.srtpRejected,
                                           "playbackPeriodMs": r.playbackPeriodMs, "redundancyFrames": r.redundancyFrames, "relay": r.relay,
                                           "playoutAdvances": r.playoutAdvances, "playoutAdvancedMs": r.playoutAdvancedMs,
                                           "encodeCPUNs": r.encodeCPUNanoseconds, "decodeCPUNs": r.decodeCPUNanoseconds]])
            },
            Command(name: "video-report", arity: .none, help: "prints the video counters (sent; per sender received, decoded, keyframes asked …)") { _ in
                guard let r = s.videoReport else { return printJSON(["videoReport": NSNull()]) }
                let received = r.received.mapValues { v -> [String: Any] in
                    ["packets": v.packets, "framesDecoded": v.framesDecoded, "framesDropped": v.framesDropped,
                     "keyframesRequested": v.keyframesRequested, "decodeErrors": v.decodeErrors]
                }
                printJSON(["videoReport": ["framesSent": r.framesSent, "keyframesSent": r.keyframesSent, "packetsSent": r.packetsSent,
                                           "bytesSent": r.bytesSent, "bitrateKbps": r.bitrateKbps, "fps": r.fps, "received": received]])
            },
        ]
    }()

    /// Help lines for `callroom join --help`.
    @MainActor package static var helpText: String {
        all.map { c -> String in
            let arg: String
            switch c.arity {
            case .none: arg = ""
            case .one(let a): arg = " " + a
            case .two(let a, let b): arg = " \(a) \(b)"
            case .text: arg = " TEXT…"
            }
            return "  " + (c.name + arg).padding(toLength: 36, withPad: " ", startingAt: 0) + c.help
        }.joined(separator: "\n")
    }

    /// Runs one line; returns false (after printing a JSON error) when it is not a valid command.
    @MainActor @discardableResult
    package static func run(_ line: String) -> Bool {
        var words = line.split(separator: " ").map(String.init)
        guard !words.isEmpty else { return true }
        let name = shortForms[words[0]] ?? words[0]
        words.removeFirst()
        guard let c = all.first(where: { $0.name == name }) else {
            return error("UNKNOWN_COMMAND", "unknown command '\(line.split(separator: " ").first ?? "")'; see 'callroom join --help'")
        }
        switch c.arity {
        case .none where !words.isEmpty: return error("BAD_ARGUMENTS", "\(c.name) takes no arguments")
        case .one(let a) where words.count != 1: return error("BAD_ARGUMENTS", "\(c.name) takes one argument, \(a)")
        case .two(let a, let b) where words.count != 2: return error("BAD_ARGUMENTS", "\(c.name) takes two arguments, \(a) \(b)")
        case .text where words.isEmpty: return error("BAD_ARGUMENTS", "\(c.name) needs text")
        default: break
        }
        if c.name == "push-to-talk", words[0] != "on" && words[0] != "off" { return error("BAD_ARGUMENTS", "push-to-talk takes on or off") }
        if c.name == "set-volume" {
            guard let g = Float(words[1]), (0...4).contains(g) else { return error("BAD_ARGUMENTS", "the volume is a number from 0 to 4") }
        }
        if c.name == "set-chat-button-unread-count" {
            guard let n = Int(words[0]), n >= 0 else { return error("BAD_ARGUMENTS", "the unread count is a whole number ≥ 0") }
        }
        c.run(words)
        return true
    }

    private static func error(_ code: String, _ message: String) -> Bool {
        printJSON(["error": ["code": code, "message": message]])
        return false
    }

    package static func printJSON(_ obj: [String: Any]) {
        if let d = try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys, .withoutEscapingSlashes]) {
            Console.out(String(decoding: d, as: UTF8.self))
        }
    }
}

import CallsAudio
import CallsCore
import CallsTransport
import Foundation

// MARK: The roster: who is in the room, and who speaks (on the client's state queue)
extension CallsClient {
    /// Someone joined, left or changed (you included), or the dominant speaker moved.
    func rosterMessage(_ m: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(state))
        switch m {
        case .participantJoined(let w):
            guard phase == .joined else { return }
            if rosterByPID[w.pid] == nil { rosterOrder.append(w.pid) }
            rosterByPID[w.pid] = w
            let roster = publishRoster()
            sendVideoSubscriptions()
            emit(.participantJoined(participant: participant(w)))
            emit(.participantListChanged(participants: roster))
        case .participantLeft(let w, let reason):
            guard phase == .joined || phase == .leaving, rosterByPID.removeValue(forKey: w.pid) != nil else { return }
            rosterOrder.removeAll { $0 == w.pid }
            engine?.forgetSender(w.ssrc, videoSSRC: w.videoSsrc)
            if lossReports.removeValue(forKey: w.pid) != nil { applyReceiverReports(now: Date()) }
            published.withLock { $0.screens[w.pid] = nil }
            let roster = publishRoster()
            sendVideoSubscriptions()
            var gone = participant(w, joined: false)
            gone.leftReason = reason.rawValue
            emit(.participantLeft(participant: gone))
            emit(.participantListChanged(participants: roster))
        case .participantUpdated(let w, let change):
            guard phase == .joined, rosterByPID[w.pid] != nil else { return }
            rosterByPID[w.pid] = w
            publishRoster()
            if !w.isPresenting { published.withLock { $0.screens[w.pid] = nil } }
            if w.pid == me?.pid { updatedSelf(w, change) } else { updatedOther(participant(w), change) }
        case .dominantSpeaker(let pid):
            guard phase == .joined, pid != dominantPID else { return }
            dominantPID = pid
            if let pid, let w = rosterByPID[pid] { emit(.dominantSpeakerChanged(participant: participant(w))) }
        default:
            break
        }
    }

    private func updatedSelf(_ w: WireParticipant, _ change: ParticipantChange) {
        me = w
        published.withLock { $0.muted = w.isAudioMuted }
        switch change {
        case .audioMuted:
            engine?.setMuted(true)  // also when a moderator muted us
            emit(.audioMuted)
        case .audioUnmuted: emit(.audioUnMuted)
        case .videoPaused:
            engine?.video?.setPaused(true)  // also when a moderator paused us
            emit(.videoPaused)
        case .videoResumed:
            engine?.video?.setPaused(false)
            emit(.videoResumed)
        case .cameraFacingChanged:
            engine?.video?.switchFacing(w.cameraFacing == "REAR" ? .rear : .front)
            emit(.cameraFacingChanged(cameraFacing: CameraFacing(rawValue: w.cameraFacing) ?? .FRONT))
        case .handRaised, .handLowered, .presentingStarted, .presentingStopped, .recordingStarted, .recordingStopped,
             .pinned, .unpinned, .roleChanged, .unmuteAllowed:
            // Hand, screen share, recording, pin and role changes are participant events, you included.
            updatedOther(participant(w), change)
        }
    }

    private func updatedOther(_ p: Participant, _ change: ParticipantChange) {
        switch change {
        case .audioMuted: emit(.participantAudioMuted(participant: p))
        case .audioUnmuted: emit(.participantAudioUnmuted(participant: p))
        case .videoPaused: emit(.participantVideoPaused(participant: p))
        case .videoResumed: emit(.participantVideoResumed(participant: p))
        case .handRaised: emit(.participantHandRaised(participant: p))
        case .handLowered: emit(.participantHandLowered(participant: p))
        case .presentingStarted: emit(.participantStartedScreenShare(participant: p))
        case .presentingStopped: emit(.participantStoppedScreenShare(participant: p))
        case .recordingStarted: emit(.participantStartedRecording(participant: p))
        case .recordingStopped: emit(.participantStoppedRecording(participant: p))
        // No callback of their own: the roster carries them.
        case .pinned, .unpinned, .roleChanged, .cameraFacingChanged, .unmuteAllowed:
            emit(.participantListChanged(participants: published.withLock { $0.roster }))
        }
    }
}

import CallsAudio
import CometChatCallsSDK

/// `--show LIST` / `--hide LIST`: the SessionSettingsBuilder's hide settings from the command
/// line, by short names (`--show chat,invite,recording --hide audio-mode`).
package enum SurfaceFlags {
    /// Short name → the builder's hide setter.
    package static let items: [(String, @Sendable (SessionSettingsBuilder, Bool) -> Void)] = [
        ("control-panel", { $0.hideControlPanel($1) }), ("header", { $0.hideHeaderPanel($1) }),
        ("timer", { $0.hideSessionTimer($1) }), ("leave", { $0.hideLeaveSessionButton($1) }),
        ("audio", { $0.hideToggleAudioButton($1) }), ("video", { $0.hideToggleVideoButton($1) }),
        ("switch-camera", { $0.hideSwitchCameraButton($1) }), ("recording", { $0.hideRecordingButton($1) }),
        ("recording-indicator", { $0.hideRecordingStatusIndicator($1) }), ("transcription", { $0.hideTranscriptionButton($1) }),
        ("captions", { $0.hideClosedCaptionButton($1) }), ("audio-mode", { $0.hideAudioModeButton($1) }),
        ("raise-hand", { $0.hideRaiseHandButton($1) }), ("invite", { $0.hideShareInviteButton($1) }),
        ("participant-list", { $0.hideParticipantListButton($1) }), ("layout", { $0.hideChangeLayoutButton($1) }),
        ("chat", { $0.hideChatButton($1) }), ("streaming", { $0.hideStreamingButton($1) }),
        ("streaming-indicator", { $0.hideStreamingStatusIndicator($1) }), ("screen-share", { $0.hideScreenShareButton($1) }),
    ]

    package static var names: String { items.map(\.0).joined(separator: ", ") }

    /// Applies `--show` then `--hide` (a name in both is hidden). Throws the usage message.
    package static func apply(show: String?, hide: String?, to builder: SessionSettingsBuilder) throws(UsageError) {
        for (list, hidden) in [(show, false), (hide, true)] {
            guard let list else { continue }
            for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                guard let item = items.first(where: { $0.0 == name }) else {
                    throw UsageError("--\(hidden ? "hide" : "show"): unknown item '\(name)' (one of: \(names))")
                }
                item.1(builder, hidden)
            }
        }
    }

    package struct UsageError: Error { package let message: String; package init(_ m: String) { message = m } }

    /// `--period-ms auto|2|5|10|20` (at most the frame; join, bench latency, bench quality): nil
    /// for automatic, the default.
    package static func playbackPeriod(_ value: String?, frameMs: Int) throws(UsageError) -> Int? {
        guard let value, value != "auto" else { return nil }
        guard let ms = Int(value), PlaybackPeriodPolicy.candidatesMs.contains(ms), ms <= frameMs else {
            throw UsageError("--period-ms must be auto, 2, 5, 10 or 20 and at most --frame-ms")
        }
        return ms
    }

    /// Checks `--input`/`--output` before anything is drawn; returns the reason when bad.
    package static func validateEndpoints(input: String, output: String) -> String? {
        do { _ = try AudioEndpoint(spec: input) } catch {
            return "--input '\(input)' is not an audio endpoint (alsa:NAME, file:PATH.wav, tone:HZ[:ON_MS:OFF_MS] or null)"
        }
        do {
            let e = try AudioEndpoint(spec: output)
            if case .tone = e { return "--output '\(output)': a tone is an input only (use alsa:NAME, file:PATH.wav or null)" }
        } catch {
            return "--output '\(output)' is not an audio endpoint (alsa:NAME, file:PATH.wav or null)"
        }
        return nil
    }
}

import CallsAudio

/// Maps the documented `AudioMode`s onto the playback devices a Linux machine has:
///
/// | mode | device |
/// | --- | --- |
/// | `.speaker` | the session's configured output (`setAudioOutput`, default `alsa:default`) — always available |
/// | `.headphones` | the first ALSA playback PCM whose name or description mentions headphones or a headset |
/// | `.bluetooth` | the first `bluealsa` PCM, or one whose description mentions Bluetooth |
/// | `.earpiece` | never on Linux (phones only) |
enum AudioModeRouter {
    /// The endpoint spec for each available mode, in the documented order.
    static func routes(configuredOutput: String, devices: [ALSADeviceInfo]) -> [(AudioMode, String)] {
        var out: [(AudioMode, String)] = [(.speaker, configuredOutput)]
        let playable = devices.filter(\.canPlay)
        func find(_ words: [String]) -> ALSADeviceInfo? {
            playable.first { d in
                let text = (d.name + " " + d.description).lowercased()
                return words.contains { text.contains($0) }
            }
        }
        if let d = find(["bluealsa", "bluetooth"]) { out.append((.bluetooth, "alsa:\(d.name)")) }
        if let d = find(["headphone", "headset"]) { out.append((.headphones, "alsa:\(d.name)")) }
        return out
    }
}

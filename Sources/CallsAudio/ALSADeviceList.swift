import CAlsa

/// One PCM device ALSA knows, from its device-name hints.
public struct ALSADeviceInfo: Sendable, Equatable {
    public var name: String
    public var description: String
    /// Whether it can play and/or capture (`IOID` hint: nil means both).
    public var canPlay: Bool
    public var canCapture: Bool

    public init(name: String, description: String, canPlay: Bool, canCapture: Bool) {
        self.name = name
        self.description = description
        self.canPlay = canPlay
        self.canCapture = canCapture
    }
}

/// Lists ALSA PCM devices (`snd_device_name_hint`). Safe from any thread.
public enum ALSADeviceList {
    public static func devices() -> [ALSADeviceInfo] {
        callroom_alsa_silence_errors()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var out: [ALSADeviceInfo] = []
        var i = 0
        while let h = hints[i] {
            i += 1
            func get(_ key: String) -> String? {
                guard let c = snd_device_name_get_hint(h, key) else { return nil }
                defer { free(c) }
                return String(cString: c)
            }
            guard let name = get("NAME") else { continue }
            let io = get("IOID")
            out.append(ALSADeviceInfo(name: name, description: (get("DESC") ?? "").replacingOccurrences(of: "\n", with: " "),
                                      canPlay: io == nil || io == "Output", canCapture: io == nil || io == "Input"))
        }
        return out
    }
}

#if canImport(Glibc)
import Glibc
#endif

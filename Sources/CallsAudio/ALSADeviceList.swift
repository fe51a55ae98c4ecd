import CAlsa
import Foundation

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

    /// Where a change to the device list shows: `/dev/snd` (a card's nodes come and go on
    /// hot-plug) and the configuration that defines PCMs (`ALSA_CONFIG_PATH`, the system and user
    /// files, the `conf.d` directories). Their modification times are read by `changeStamp`.
    /// (Read with `getenv`: `ProcessInfo.environment` copies the whole environment each time,
    /// about a hundred allocations every 3 s in a call.)
    public static var watchedPaths: [String] {
        var paths = ["/dev/snd", "/etc/asound.conf", "/etc/alsa/conf.d", "/usr/share/alsa/alsa.conf",
                     "/usr/share/alsa/alsa.conf.d"]
        if let home = getenv("HOME").map({ String(cString: $0) }) { paths += [home + "/.asoundrc", home + "/.config/alsa/asoundrc"] }
        if let config = getenv("ALSA_CONFIG_PATH").map({ String(cString: $0) }) { paths += config.split(separator: ":").map(String.init) }
        return paths
    }

    /// A cheap summary of `paths` (a few `stat`s): equal stamps mean `devices()` would list the
    /// same devices, so a watcher re-reads the list (a full parse of ALSA's configuration, about
    /// 2 ms here and more with real cards) only when the stamp moves. Safe from any thread.
    public static func changeStamp(paths: [String] = watchedPaths) -> Stamp {
        Stamp(fields: paths.flatMap { path -> [Int] in
            var st = stat()
            guard stat(path, &st) == 0 else { return [-1] }
            return [Int(st.st_ino), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_ctim.tv_nsec)]
        })
    }

    /// What `changeStamp` read: each path's inode and times (or that it is missing).
    public struct Stamp: Equatable, Sendable { let fields: [Int] }
}

#if canImport(Glibc)
import Glibc
#endif

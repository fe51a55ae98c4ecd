import Foundation

/// Reads `cometchat-settings.json`:
/// `{"appId": "...", "region": "...", "callsSDK": {"host": "", "adminHost": "", "clientHost": "", "callsHost": ""}}`
/// (CallRoom adds `callsSDK.caFile` and `callsSDK.insecure` for `https://` servers).
///
/// Search order: an explicit path, `./cometchat-settings.json`, then
/// `$XDG_CONFIG_HOME/callroom/cometchat-settings.json` (`~/.config/callroom/…` when unset).
package enum SettingsFile {
    static let fileName = "cometchat-settings.json"

    static func searchPaths(explicit: String?) -> [String] {
        if let e = explicit { return [e] }
        let env = ProcessInfo.processInfo.environment
        let config = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? "~") + "/.config")
        return [FileManager.default.currentDirectoryPath + "/" + fileName, config + "/callroom/" + fileName]
    }

    package static func load(path explicit: String? = nil) throws(CometChatCallException) -> CallAppSettings {
        let paths = searchPaths(explicit: explicit)
        guard let path = paths.first(where: { FileManager.default.fileExists(atPath: $0) }),
              let data = FileManager.default.contents(atPath: path) else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsFileNotFound,
                                         errorDescription: "No \(fileName) found (looked in \(paths.joined(separator: ", "))).")
        }
        return try parse(data, path: path)
    }

    static func parse(_ data: Data, path: String = fileName) throws(CometChatCallException) -> CallAppSettings {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsFileInvalid,
                                         errorDescription: "\(path) is not a JSON object.")
        }
        guard let appId = root["appId"] as? String, !appId.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsMissingAppID,
                                         errorDescription: "\(path) has no appId.")
        }
        guard let region = root["region"] as? String, !region.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsMissingRegion,
                                         errorDescription: "\(path) has no region.")
        }
        var host = ""
        var caFile: String?
        var insecure = false
        if let calls = root["callsSDK"] {
            guard let c = calls as? [String: Any] else {
                throw CometChatCallException(errorCode: CometChatCallException.settingsFileInvalid,
                                             errorDescription: "\(path): callsSDK must be an object.")
            }
            host = (c["host"] as? String) ?? ""
            if let f = c["caFile"] {
                guard let f = f as? String, !f.isEmpty else {
                    throw CometChatCallException(errorCode: CometChatCallException.settingsFileInvalid, errorDescription: "\(path): callsSDK.caFile must be a path.")
                }
                caFile = f
            }
            if let v = c["insecure"] {
                guard let b = v as? Bool else {
                    throw CometChatCallException(errorCode: CometChatCallException.settingsFileInvalid, errorDescription: "\(path): callsSDK.insecure must be true or false.")
                }
                insecure = b
            }
        }
        return CallAppSettingsBuilder().set(appID: appId).set(region: region).set(host: host).set(caFile: caFile).set(insecureTLS: insecure).build()
    }
}

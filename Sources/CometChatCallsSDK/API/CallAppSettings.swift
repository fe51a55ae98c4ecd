import CallsTransport
import Foundation

/// App-level settings for `CometChatCalls(callsAppSettings:onSuccess:onError:)`. A value.
public struct CallAppSettings: Sendable {
    public var appID: String
    public var region: String
    /// The CallRoom server: `host:port` or a URL (`http://host:port`, `https://host[:port]`).
    /// Empty: see `resolvedServerURL`.
    public var host: String
    /// CallRoom: a PEM CA bundle the server's TLS certificate is checked against (nil: the
    /// system's CAs).
    public var caFile: String? = nil
    /// CallRoom: do not check the server's TLS certificate at all (test servers only).
    public var insecureTLS: Bool = false

    /// How TLS servers are checked.
    package var trust: TLSTrust { TLSTrust(caFile: caFile, insecure: insecureTLS) }
    /// Where every listener callback and completion handler is delivered (default: main).
    public var callbackQueue: DispatchQueue

    /// The server base URL: `host` when given, else `$CALLROOM_HOST`, else `http://127.0.0.1:7880`
    /// (the default `callroomd` address). The region never selects a host: CallRoom is self-hosted.
    public func resolvedServerURL() throws(CometChatCallException) -> URL {
        var h = host.trimmingCharacters(in: .whitespaces)
        if h.isEmpty { h = ProcessInfo.processInfo.environment["CALLROOM_HOST"] ?? "" }
        if h.isEmpty { h = "http://127.0.0.1:7880" }
        if !h.contains("://") { h = "http://" + h }
        guard let url = URL(string: h), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw CometChatCallException(errorCode: CometChatCallException.hostInvalid,
                                         errorDescription: "'\(host)' is not a server address (use host:port, http://host:port or https://host[:port])")
        }
        return url
    }
}

/// Builds `CallAppSettings`: `CallAppSettingsBuilder().set(appID:).set(region:).build()`.
/// A value type; each setter returns a modified copy.
public struct CallAppSettingsBuilder: Sendable {
    private var settings = CallAppSettings(appID: "", region: "", host: "", callbackQueue: .main)

    public init() {}

    public func set(appID: String) -> CallAppSettingsBuilder { var b = self; b.settings.appID = appID; return b }
    public func set(region: String) -> CallAppSettingsBuilder { var b = self; b.settings.region = region; return b }
    /// The CallRoom server (`host:port` or URL).
    public func set(host: String) -> CallAppSettingsBuilder { var b = self; b.settings.host = host; return b }
    /// CallRoom: the queue callbacks are delivered on (default main).
    public func set(callbackQueue: DispatchQueue) -> CallAppSettingsBuilder { var b = self; b.settings.callbackQueue = callbackQueue; return b }
    /// CallRoom: trust the CAs in this PEM file for an `https://` server (else the system's).
    public func set(caFile: String?) -> CallAppSettingsBuilder { var b = self; b.settings.caFile = caFile; return b }
    /// CallRoom: skip TLS certificate checks (a test server; never in production).
    public func set(insecureTLS: Bool) -> CallAppSettingsBuilder { var b = self; b.settings.insecureTLS = insecureTLS; return b }

    @available(*, deprecated, renamed: "set(appID:)")
    public func setAppId(_ appID: String) -> CallAppSettingsBuilder { set(appID: appID) }
    @available(*, deprecated, renamed: "set(region:)")
    public func setRegion(_ region: String) -> CallAppSettingsBuilder { set(region: region) }

    public func build() -> CallAppSettings { settings }
}

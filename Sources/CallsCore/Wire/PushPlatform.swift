import CallsSupport

/// Where a device's push token came from, and so which service the server sends it through.
public enum PushPlatform: String, Codable, Sendable, CaseIterable {
    /// A PushKit VoIP token (APNs, topic `<bundle>.voip`): incoming calls ring it.
    case apnsVoip = "apns_voip"
    /// A regular APNs token (alerts; kept for chat push; calls do not ring it).
    case apns
    /// A Firebase Cloud Messaging registration token: incoming calls ring it (data message).
    case fcm

    /// Whether ringing calls push to tokens of this platform.
    public var ringsCalls: Bool { self != .apns }
    public var isAPNs: Bool { self != .fcm }
}

import CallsCore
import CallsStore
import CallsTransport
import Foundation

/// A webhook as `GET /v3/webhooks` shows it: never its secret.
struct WebhookBody: Encodable {
    enum Source: String, Encodable { case config, api }
    var id: String
    var url: String
    /// nil: every trigger.
    var triggers: [String]?
    var source: Source

    init(_ w: WebhookConfig, source: Source) {
        id = w.id
        url = w.url
        triggers = w.triggers?.sorted()
        self.source = source
    }
}

// MARK: Webhooks (`/v3/webhooks`, the operator's)
extension RESTRouter {
    /// `POST /v3/webhooks` (id optional: generated) or `PUT /v3/webhooks/{id}` (replaces it whole).
    func saveWebhook(_ r: HTTPRequest, id pathId: String?) throws -> HTTPResponse {
        try requireAPIKey(r)
        struct Body: Decodable { var id: String?; var url: String?; var secret: String?; var triggers: [String]? }
        let b: Body = try decode(r)
        let id = pathId ?? b.id ?? "webhook-" + String(UUID().uuidString.prefix(8)).lowercased()
        if let pathId, let bodyId = b.id, bodyId != pathId { throw ServerError(.webhookInvalid, "The body's id differs from the path's.") }
        let hook: WebhookConfig
        do { hook = try WebhookConfig.validated(id: id, url: b.url, secret: b.secret, triggers: b.triggers) } catch {
            throw ServerError(.webhookInvalid, error.message + ".")
        }
        if webhooks.isFixed(id) { throw ServerError(.webhookInConfig, "Webhook '\(id)' is defined in the config file; change it there.") }
        switch try store.saveWebhook(hook, replace: pathId != nil, at: epochMilliseconds()) {
        case .saved: break
        case .conflict:
            throw pathId == nil ? ServerError(.webhookAlreadyExists, "A webhook '\(id)' exists already.")
                : ServerError(.webhookNotFound, "No webhook '\(id)'.")
        case .full:
            throw ServerError(.limitReached, "The app has \(maxStoredWebhooks) webhooks added over REST already (each event is a delivery to every one): remove one first.")
        }
        webhooksChanged()
        return ok(WebhookBody(hook, source: .api))
    }
}

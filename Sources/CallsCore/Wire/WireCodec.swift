import CallsSupport
import Foundation

/// One kind of signalling message, declared once: its wire `type`, the `Codable` body whose
/// fields sit beside `type` in the JSON object, how a body becomes the message (`make`; nil
/// when a field the message needs is missing) and how the message gives its body back
/// (`match`; nil when it is another kind). A value; any thread.
struct WireCase<Message: Sendable>: Sendable {
    let type: String
    let decode: @Sendable (Data) throws(SignalDecodeError) -> Message
    let encode: @Sendable (Message) -> String?

    init<Body: Codable & Sendable>(_ type: String, _ body: Body.Type, make: @escaping @Sendable (Body) -> Message?,
                                   match: @escaping @Sendable (Message) -> Body?) {
        self.type = type
        decode = { (data: Data) throws(SignalDecodeError) -> Message in
            let body: Body
            do { body = try JSONDecoder().decode(Typed<Body>.self, from: data).body } catch let error as DecodingError {
                throw .badFields("\(type): " + (JSONFieldProblem.describe(error, in: data) ?? "the message must be a JSON object."))
            } catch {
                throw .badFields("\(type): the message is not valid.")
            }
            guard let m = make(body) else { throw .badFields("\(type): a required field is missing.") }
            return m
        }
        encode = { m in match(m).map { SignalJSON.encode(Typed(type: type, body: $0)) } }
    }
}

/// A message family's codec, from its table of cases: decoding looks the `type` up, encoding
/// asks each case in turn. A value; any thread.
struct WireCodec<Message: Sendable>: Sendable {
    let cases: [WireCase<Message>]
    private let byType: [String: WireCase<Message>]

    init(_ cases: [WireCase<Message>]) {
        self.cases = cases
        byType = Dictionary(cases.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first })
        precondition(byType.count == cases.count, "two message cases share a wire type")
    }

    func decode(_ data: Data) throws(SignalDecodeError) -> Message {
        let type = try SignalJSON.type(of: data)
        guard let c = byType[type] else { throw .unknownType(String(type.prefix(64))) }
        return try c.decode(data)
    }

    /// The JSON text; every case has a row (checked by `SignalMessageTests`), so the fallback
    /// is never reached.
    func encode(_ message: Message) -> String {
        for c in cases { if let text = c.encode(message) { return text } }
        return "{}"
    }

    /// The wire type of a message (nil: a case without a row).
    func type(of message: Message) -> String? { cases.first { $0.encode(message) != nil }?.type }
}

/// A body with the message's `type` beside its fields.
struct Typed<T: Codable & Sendable>: Codable, Sendable {
    var type: String
    var body: T
    init(type: String, body: T) { self.type = type; self.body = body }
    enum K: String, CodingKey { case type }
    init(from decoder: Decoder) throws {
        type = try decoder.container(keyedBy: K.self).decode(String.self, forKey: .type)
        body = try T(from: decoder)
    }
    func encode(to encoder: Encoder) throws {
        try body.encode(to: encoder)
        var c = encoder.container(keyedBy: K.self)
        try c.encode(type, forKey: .type)
    }
}

private struct TypeProbe: Decodable { var type: String? }

enum SignalJSON {
    static func encode<T: Encodable>(_ v: T) -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain structs cannot fail.
        guard let data = try? enc.encode(v) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func type(of data: Data) throws(SignalDecodeError) -> String {
        guard let probe = try? JSONDecoder().decode(TypeProbe.self, from: data) else { throw .notJSON }
        guard let t = probe.type else { throw .missingType }
        return t
    }
}

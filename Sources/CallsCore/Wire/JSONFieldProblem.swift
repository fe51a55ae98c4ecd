import Foundation

/// What was wrong with a JSON object a client sent, in the terms of its fields — `uid is
/// required.`, `name must be a string.`, `reports[2].lossPercent must be a number.` — for REST
/// bodies and signalling messages alike. Never echoes a value; a key the client made up (a
/// dictionary's) is shown only when it looks like a field name. A value; any thread.
package enum JSONFieldProblem {
    /// The problem with one field, or nil when it is the document itself (not JSON, not an
    /// object): the caller words that one. `document` is what failed to decode: Foundation
    /// reports a number a field cannot hold (`1.5` or `1e30` for a whole number) without a path,
    /// as if the JSON were broken; when the document parses, that is what it was.
    package static func describe(_ error: DecodingError, in document: Data) -> String? {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(field(context.codingPath + [key])) is required."
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            guard !context.codingPath.isEmpty else { return nil }
            return "\(field(context.codingPath)) must be \(kind(type))."
        case .dataCorrupted(let context):
            guard !context.codingPath.isEmpty else {
                return (try? JSONSerialization.jsonObject(with: document)) == nil ? nil : numberNotWhole
            }
            return "\(field(context.codingPath)) has a value it cannot take."
        @unknown default:
            return nil
        }
    }

    /// What a number a field cannot hold is said as (Foundation does not say which field).
    package static let numberNotWhole = "a number is not whole, or too large for its field."

    /// `reports[2].lossPercent`: keys joined by dots, indexes in brackets.
    static func field(_ path: [any CodingKey]) -> String {
        var s = ""
        for key in path {
            if let i = key.intValue, key.stringValue == String(i) || key.stringValue.hasPrefix("Index ") {
                s += "[\(i)]"
            } else {
                s += (s.isEmpty ? "" : ".") + shown(key.stringValue)
            }
        }
        return s.isEmpty ? "the value" : s
    }

    private static func shown(_ key: String) -> String {
        let plain = key.utf8.count <= 64 && !key.isEmpty
            && key.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
        return plain ? key : "…"
    }

    /// The JSON kind a Swift type is read from.
    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type, is UInt64.Type, is Int32.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return "a whole number"
        case is Double.Type, is Float.Type: return "a number"
        default:
            // (A keyed body, a dictionary or a nested struct: an object.)
            return String(describing: type).hasPrefix("Array<") ? "an array" : "an object"
        }
    }
}

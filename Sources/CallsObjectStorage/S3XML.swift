import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The few fields CallRoom reads from S3's XML replies (`UploadId`; an error's `Code` and
/// `Message`; the uploads a ListMultipartUploads lists), by Foundation's XMLParser: the text of
/// the first element of each name, in the whole reply or in each record.
enum S3XML {
    /// The first `names` elements' text anywhere in the reply.
    static func first(_ names: Set<String>, in bytes: [UInt8]) -> [String: String] {
        records(nil, fields: names, in: bytes).first ?? [:]
    }

    /// The fields `names` of every `element` (for example each `Upload` of a
    /// ListMultipartUploads reply), in order; at most `limit` records. Nil `element`: the whole
    /// reply is one record.
    static func records(_ element: String?, fields names: Set<String>, in bytes: [UInt8], limit: Int = 1000) -> [[String: String]] {
        let reader = Reader(element, names, limit: limit)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        if element == nil, let r = reader.record { reader.records.append(r) }
        return reader.records
    }

    private final class Reader: NSObject, XMLParserDelegate {
        let element: String?
        let names: Set<String>
        let limit: Int
        var records: [[String: String]] = []
        /// The record being read (from the start for a whole-reply record).
        var record: [String: String]?
        private var current: String?
        private var text = ""

        init(_ element: String?, _ names: Set<String>, limit: Int) {
            self.element = element
            self.names = names
            self.limit = limit
            record = element == nil ? [:] : nil
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == element, records.count < limit {
                record = [:]
            } else if names.contains(name), record?[name] == nil, record != nil {
                current = name
                text = ""
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if current != nil, text.count < 4096 { text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == current { record?[name] = text.trimmingCharacters(in: .whitespacesAndNewlines); current = nil }
            if name == element, let r = record { records.append(r); record = nil }
        }
    }
}

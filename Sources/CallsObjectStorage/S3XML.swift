import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The few fields CallRoom reads from S3's XML replies (`UploadId`; an error's `Code` and
/// `Message`; the uploads a ListMultipartUploads lists), by Foundation's XMLParser: the text of
/// the first element of each name, or of each record.
enum S3XML {
    static func first(_ names: Set<String>, in bytes: [UInt8]) -> [String: String] {
        let reader = Reader(names)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        return reader.found
    }

    /// The fields `names` of every `element` (for example each `Upload` of a
    /// ListMultipartUploads reply), in order; at most `limit` records.
    static func records(_ element: String, fields names: Set<String>, in bytes: [UInt8], limit: Int = 1000) -> [[String: String]] {
        let reader = RecordReader(element, names, limit: limit)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        return reader.records
    }

    private final class RecordReader: NSObject, XMLParserDelegate {
        let element: String
        let names: Set<String>
        let limit: Int
        var records: [[String: String]] = []
        private var record: [String: String]?
        private var current: String?
        private var text = ""

        init(_ element: String, _ names: Set<String>, limit: Int) {
            self.element = element
            self.names = names
            self.limit = limit
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == element, records.count < limit { record = [:] } else if record != nil, names.contains(name) { current = name; text = "" }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if current != nil, text.count < 4096 { text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == current { record?[name] = text.trimmingCharacters(in: .whitespacesAndNewlines); current = nil }
            if name == element, let r = record { records.append(r); record = nil }
        }
    }

    private final class Reader: NSObject, XMLParserDelegate {
        let names: Set<String>
        var found: [String: String] = [:]
        private var current: String?
        private var text = ""

        init(_ names: Set<String>) { self.names = names }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if names.contains(name), found[name] == nil { current = name; text = "" }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if current != nil, text.count < 4096 { text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == current { found[name] = text.trimmingCharacters(in: .whitespacesAndNewlines); current = nil }
        }
    }
}

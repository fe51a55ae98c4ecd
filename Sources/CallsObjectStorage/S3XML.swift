import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The few fields CallRoom reads from S3's XML replies (`UploadId`; an error's `Code` and
/// `Message`), by Foundation's XMLParser: the text of the first element of each name.
enum S3XML {
    static func first(_ names: Set<String>, in bytes: [UInt8]) -> [String: String] {
        let reader = Reader(names)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        return reader.found
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

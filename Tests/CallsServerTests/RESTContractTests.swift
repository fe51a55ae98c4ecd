@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import Foundation
import XCTest

/// docs/protocol.md and the code list the same REST endpoints and error codes: the router's
/// route table is the only list of endpoints, `RESTErrorCode` the only list of codes.
final class RESTContractTests: XCTestCase {
    func protocolDoc() throws -> [String] {
        try String(contentsOfFile: BuiltProducts.packageRoot + "/docs/protocol.md", encoding: .utf8).components(separatedBy: "\n")
    }

    func testEveryEndpointIsDocumentedAndEveryDocumentedEndpointIsRouted() throws {
        var documented = Set<String>()
        for line in try protocolDoc() where line.hasPrefix("| `GET ") || line.hasPrefix("| `POST ") || line.hasPrefix("| `PUT ") || line.hasPrefix("| `DELETE ") {
            let cell = line.dropFirst(3).prefix { $0 != "`" }
            let parts = cell.split(separator: " ")
            guard parts.count == 2 else { continue }
            let path = parts[1].prefix { $0 != "?" }.split(separator: "/").map { $0.hasPrefix("{") ? "*" : String($0) }.joined(separator: "/")
            documented.insert("\(parts[0]) \(path)")
        }
        documented.remove("GET metrics")  // served by CallServer itself, beside the router
        let routed = Set(RESTRouter.routes.map { "\($0.method.rawValue) \($0.pattern.joined(separator: "/"))" })
        XCTAssertEqual(routed.subtracting(documented), [], "routed but not documented")
        XCTAssertEqual(documented.subtracting(routed), [], "documented but not routed")
    }

    func testTheErrorCodeTableIsTheEnum() throws {
        var documented: [String: Int] = [:]
        var inTable = false
        for line in try protocolDoc() {
            if line.hasPrefix("### ") { inTable = line == "### REST error codes" }
            guard inTable, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let status = Int(cells[1]) else { continue }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = status
        }
        let coded = Dictionary(uniqueKeysWithValues: RESTErrorCode.allCases.map { ($0.rawValue, $0.status) })
        XCTAssertEqual(coded, documented)
    }

    /// The metrics paragraph's `callroom_refused_total{cause="a|b|…"}` names every cause, and no
    /// other (three causes were counted but not listed before).
    func testTheRefusalCausesListedAreTheEnum() throws {
        let line = try XCTUnwrap(protocolDoc().first { $0.hasPrefix(#"`callroom_refused_total{cause=""#) })
        let listed = line.drop { $0 != "\"" }.dropFirst().prefix { $0 != "\"" }.split(separator: "|").map(String.init)
        XCTAssertEqual(Set(listed), Set(RefusalCause.allCases.map(\.rawValue)))
    }
}

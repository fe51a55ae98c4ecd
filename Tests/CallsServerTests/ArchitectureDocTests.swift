import CallRoomTestSupport
import Foundation
import XCTest

/// docs/architecture.md says what the code is, checked where it can be: every thread and
/// queue the code names is in its thread table and every name there is in the code; every type
/// it names in backticks is declared (in Sources or Tests, or is a target); every path it names
/// exists. (As `RESTContractTests` does for the endpoints and error codes of protocol.md.)
final class ArchitectureDocTests: XCTestCase {
    let root = BuiltProducts.packageRoot

    func doc() throws -> String { try String(contentsOfFile: root + "/docs/architecture.md", encoding: .utf8) }

    func swiftFiles(under dir: String) -> [String] {
        let base = root + "/" + dir
        return (FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }.map { base + "/" + $0 }
    }

    func source(_ dir: String) -> String {
        swiftFiles(under: dir).compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
    }

    func matches(_ pattern: String, in text: String, group: Int = 1) -> [String] {
        guard let re = try? NSRegularExpression(pattern: pattern) else { return [] }
        let ns = text as NSString
        return re.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: group)) }
    }

    /// Thread and queue names in the code, an interpolation standing for any segment.
    func codeThreadNames() -> Set<String> {
        let src = source("Sources")
        let named = matches(#"(?:label: |\.name = |name: |spawn\(|ThreadName\.set\()"(callroom\.[^"]+)""#, in: src)
        return Set(named)
    }

    func tableThreadNames(_ doc: String) throws -> Set<String> {
        guard let start = doc.range(of: "## Threads at a glance"), let end = doc.range(of: "### Generated sources") else {
            throw XCTSkip("no thread table")
        }
        let table = String(doc[start.upperBound..<end.lowerBound])
        return Set(matches(#"`(callroom\.[a-z0-9.-]+)`"#, in: table))
    }

    /// A code name with `\(…)` in it matches any table name with something in its place.
    func covers(_ codeName: String, _ tableName: String) -> Bool {
        guard codeName.contains("\\(") else { return codeName == tableName }
        let parts = codeName.components(separatedBy: #"\("#)
        let pattern = "^" + NSRegularExpression.escapedPattern(for: parts[0]) + parts.dropFirst().map { p -> String in
            let rest = p.split(separator: ")", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            return "[a-z0-9]+" + NSRegularExpression.escapedPattern(for: rest)
        }.joined() + "$"
        return tableName.range(of: pattern, options: .regularExpression) != nil
    }

    func testTheThreadTableListsEveryThreadAndQueueTheCodeNames() throws {
        let code = codeThreadNames(), table = try tableThreadNames(try doc())
        XCTAssertGreaterThan(code.count, 20)
        for name in code.sorted() {
            XCTAssertTrue(table.contains { covers(name, $0) }, "\(name) runs in the code but is not in architecture.md's thread table")
        }
        for name in table.sorted() {
            XCTAssertTrue(code.contains { covers($0, name) } || code.contains { covers($0, name + ".0") },
                          "architecture.md's thread table names \(name), which no code starts")
        }
    }

    func testEveryTypeItNamesIsDeclared() throws {
        let text = try doc()
        let declared = Set(matches(#"\b(?:class|struct|enum|protocol|typealias|actor|extension)\s+(\w+)"#,
                                   in: source("Sources") + source("Tests")))
        let package = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        let targets = Set(matches(#"name: "(\w+)""#, in: package))
        // From the toolchain, named in the history the page tells.
        let toolchain: Set<String> = ["Mutex"]
        let named = Set(matches(#"`([A-Z][a-z]+[A-Za-z0-9]*)`"#, in: text))
        XCTAssertGreaterThan(named.count, 100)
        for n in named.sorted() where !declared.contains(n) && !targets.contains(n) && !toolchain.contains(n) {
            XCTFail("architecture.md names `\(n)`, which nothing declares")
        }
    }

    func testEveryPathItNamesExists() throws {
        let text = try doc()
        for path in Set(matches(#"`((?:Sources|Tests|scripts|Resources|docs)/[^`\s*]+)`"#, in: text)).sorted() {
            XCTAssertTrue(FileManager.default.fileExists(atPath: root + "/" + path), "architecture.md names \(path), which does not exist")
        }
    }

    /// The class names a test list names (one a line, `#` comments).
    func listedClasses(_ file: String) throws -> [String] {
        let list = try String(contentsOfFile: root + "/Tests/" + file, encoding: .utf8)
        return list.split(separator: "\n").compactMap { line -> String? in
            let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return text.split(separator: " ").first.map(String.init)
        }
    }

    /// Tests/slow-tests.txt (what `scripts/test.sh --quick` skips) names test classes that
    /// exist: a renamed class would otherwise silently join the quick loop, a typo skip nothing.
    func testTheSlowTestListNamesTestClasses() throws {
        let names = try listedClasses("slow-tests.txt")
        XCTAssertGreaterThan(names.count, 10)
        let declared = Set(matches(#"class (\w+): XCTestCase"#, in: source("Tests")))
        for n in names { XCTAssertTrue(declared.contains(n), "slow-tests.txt names \(n), which is no XCTestCase class") }
        XCTAssertEqual(Set(names).count, names.count, "each class once")
    }

    /// Tests/postgres-pass-skips.txt names server test classes (the PostgreSQL pass filters
    /// `CallsServerTests`, so another target's class there, or a typo, would skip nothing).
    /// Why each may be left out (its subject is not the store) is the list's own comment.
    func testThePostgresPassSkipsOnlyServerTestsThatDoNotTouchTheStore() throws {
        let names = try listedClasses("postgres-pass-skips.txt")
        XCTAssertGreaterThan(names.count, 5)
        let serverFiles = swiftFiles(under: "Tests/CallsServerTests")
        for n in names {
            let file = serverFiles.first { (try? String(contentsOfFile: $0, encoding: .utf8))?.contains("class \(n): XCTestCase") == true }
            XCTAssertNotNil(file, "postgres-pass-skips.txt names \(n), which is no CallsServerTests class")
        }
        XCTAssertEqual(Set(names).count, names.count, "each class once")
    }

    /// The ownership table's rows, split into cells (state, owner, others, enforced by).
    func ownershipRows() throws -> [[String]] {
        let doc = try doc()
        guard let start = doc.range(of: "### Who owns what"), let end = doc.range(of: "### ThreadSanitizer") else {
            throw TestFailure("no ownership table")
        }
        return doc[start.upperBound..<end.lowerBound].split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| state") }
            .map { $0.split(separator: "|", omittingEmptySubsequences: false).map { String($0) } }
            .filter { $0.count >= 5 }
    }

    /// Every source file once: its name, its text and the types it declares (the ownership
    /// tests ask for the code of dozens of types; reading and searching every file for each
    /// took 30 s).
    private static let sources: [(name: String, text: String, declares: Set<String>)] = {
        let base = BuiltProducts.packageRoot + "/Sources"
        let files = (FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }.sorted()
        let declaration = try? NSRegularExpression(pattern: #"(?:class|struct|enum|actor) ([A-Za-z0-9_]+)\b"#)
        return files.compactMap { f in
            guard let text = try? String(contentsOfFile: base + "/" + f, encoding: .utf8) else { return nil }
            let ns = text as NSString
            let names = declaration?.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: 1)) } ?? []
            return ((f as NSString).lastPathComponent, text, Set(names))
        }
    }()

    /// The code of `type`: its declaring file and its `Type+….swift` extensions.
    func code(of type: String) -> String {
        let base = type.split(separator: ".").first.map(String.init) ?? type
        return Self.sources.filter { $0.name == base + ".swift" || $0.name.hasPrefix(base + "+") || $0.declares.contains(base) }
            .map(\.text).joined(separator: "\n")
    }

    func testTheOwnershipTablesMechanismsAreInTheCodeOfTheirRows() throws {
        let rows = try ownershipRows()
        XCTAssertGreaterThan(rows.count, 25)
        let mechanisms: [(claim: String, inCode: [String])] = [
            ("`Locked`", ["Locked<", "Locked("]), ("`LockedState`", ["LockedState<", "LockedState("]), ("Mutex", ["Mutex<", "Mutex("]),
            ("atomics", ["Atomic<", "Atomic("]), ("dispatchPrecondition", ["dispatchPrecondition("]),
        ]
        var checked = 0
        for cells in rows {
            let row = cells.joined(separator: "|")
            let enforced = cells[4]
            let types = matches(#"`([A-Z][A-Za-z]+(?:\.[A-Z][A-Za-z]+)?)`"#, in: cells[1] + cells[4])
                .filter { !["Locked", "Mutex"].contains($0) }
            guard !types.isEmpty else { continue }
            let source = types.map(code(of:)).joined(separator: "\n")
            for m in mechanisms where enforced.contains(m.claim) {
                checked += 1
                XCTAssertTrue(m.inCode.contains { source.contains($0) },
                              "the row of \(types) says \(m.claim), which none of their code uses: \(row.prefix(120))")
            }
        }
        XCTAssertGreaterThan(checked, 15, "claims checked")
    }

    /// The owner column: every thread or queue it names (`callroom.…`) is one the code names, and
    /// the code of the row's types is where that thread or queue is made or checked (its label
    /// is in it) — a row cannot name a queue its types never touch.
    func testTheOwnershipTablesOwnersAreTheThreadsTheCodeOfTheirRowsUses() throws {
        let rows = try ownershipRows()
        let threads = codeThreadNames()
        var checked = 0
        for cells in rows {
            let owners = matches(#"`(callroom\.[a-z0-9.\-]+)`"#, in: cells[2])
            let types = matches(#"`([A-Z][A-Za-z]+(?:\.[A-Z][A-Za-z]+)?)`"#, in: cells[1] + cells[2] + cells[4])
                .filter { !["Locked", "LockedState", "Mutex"].contains($0) }
            guard !owners.isEmpty, !types.isEmpty else { continue }
            let source = types.map(code(of:)).joined(separator: "\n")
            let named = Set(matches(#""(callroom\.[^"]+)""#, in: source))
            for owner in owners {
                checked += 1
                XCTAssertTrue(threads.contains { covers($0, owner) }, "the owner \(owner) of \(types) is no thread or queue of the code")
                XCTAssertTrue(named.contains { covers($0, owner) },
                              "the row of \(types) says \(owner) owns it, but their code never names that thread or queue: \(cells[1].prefix(80))")
            }
        }
        XCTAssertGreaterThan(checked, 8, "owners checked")
    }
}

/// The checks a session description passes before sofia-sip's parser sees it.
///
/// sofia-sip 1.12.11's `sdp_parse` never returns on some malformed `m=` lines: when a format in
/// a section whose protocol it does not read as RTP (Debian's version reads `UDP/TLS/RTP/SAVPF`
/// that way too) starts with a character that is not a token character (`m=audio 9
/// UDP/TLS/RTP/SAVPF ;11`, a non-ASCII byte, a `=` in the protocol), its format loop stops
/// advancing and allocates until memory runs out. So every description is first held to the
/// grammar browsers write (RFC 8866 §9): printable ASCII lines, and each `m=` line exactly
/// `media SP port["/"count] SP proto 1*(SP fmt)` with token characters. Pure; any thread.
enum SDPPrecheck {
    /// RFC 8866's `token-char`, the set sofia-sip's `TOKEN` names.
    static func isToken(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-!#$%&'*+.^_`{|}~".utf8.contains(b)
        }
    }

    /// Throws `SDPError.malformed` naming the first line that breaks the rules.
    static func check(_ text: String) throws(SDPError) {
        let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n"), tab = UInt8(ascii: "\t")
        var number = 0
        for line in text.utf8.split(whereSeparator: { $0 == cr || $0 == lf }) {
            number += 1
            // Printable ASCII (and tabs) only: no NUL, no control bytes, no UTF-8.
            if let bad = line.first(where: { !($0 >= 0x20 && $0 < 0x7f) && $0 != tab }) {
                throw .malformed("line \(number) holds the byte 0x\(String(bad, radix: 16)) (SDP lines are printable ASCII)")
            }
            // sofia-sip strips leading blanks before it reads the field letter.
            let record = line.drop { $0 == UInt8(ascii: " ") || $0 == tab }
            guard record.starts(with: "m=".utf8) else { continue }
            guard mediaLineIsWellFormed(Array(record.dropFirst(2))) else {
                throw .malformed("line \(number): an m= line is \"media port proto fmt…\" with single spaces and token characters")
            }
        }
    }

    /// `media SP port ["/" integer] SP proto 1*(SP fmt)`, proto = token *("/" token).
    static func mediaLineIsWellFormed(_ value: [UInt8]) -> Bool {
        let fields = value.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard fields.count >= 4 else { return false }
        let digit: (UInt8) -> Bool = { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        let media = fields[0], port = fields[1], proto = fields[2], formats = fields[3...]
        guard !media.isEmpty, media.allSatisfy(isToken) else { return false }
        let portParts = port.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard (1...2).contains(portParts.count), portParts.allSatisfy({ !$0.isEmpty && $0.count <= 5 && $0.allSatisfy(digit) }) else { return false }
        let protoParts = proto.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard protoParts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isToken) }) else { return false }
        return formats.allSatisfy { !$0.isEmpty && $0.allSatisfy(isToken) }
    }
}

import COgg
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads back what `OggOpusWriter` wrote, and repairs a recording a crash cut short.
/// Stateless; safe from any thread (each call works on its own file).
public enum OggOpusFile {
    /// What a recording holds.
    public struct Summary: Sendable, Equatable {
        public var serial: Int32
        public var preSkip: Int
        /// Granule position of the last complete page (48 kHz samples, pre-skip included).
        public var lastGranule: Int64
        public var pages: Int
        /// The last page carries the end-of-stream flag.
        public var ended: Bool
        /// Bytes of complete pages (anything after them is a torn write).
        public var validBytes: Int
        /// Playable length in seconds (last granule less pre-skip).
        public var seconds: Double { Double(max(0, lastGranule - Int64(preSkip))) / 48_000 }
    }

    /// Parses every page (their CRCs checked by libogg).
    public static func inspect(_ path: String) throws(RecordingError) -> Summary {
        let (summary, _) = try scan(path)
        return summary
    }

    /// After a crash: drops a torn last page and marks the last complete one as the end of the
    /// stream (its CRC recomputed), so the file is a finished recording of what was written.
    /// A file that ended properly is left alone. Returns what the file holds afterwards.
    @discardableResult
    public static func finalise(_ path: String) throws(RecordingError) -> Summary {
        var (summary, lastPage) = try scan(path)
        guard !summary.ended, let last = lastPage else { return summary }
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotRead(path: path, errno: errno) }
        defer { close(fd) }
        guard ftruncate(fd, off_t(summary.validBytes)) == 0 else { throw .writeFailed(path: path, errno: errno) }
        var header = last.header
        var body = last.body
        header[5] |= 0x04  // end of stream
        for i in 22..<26 { header[i] = 0 }
        header.withUnsafeMutableBufferPointer { h in
            body.withUnsafeMutableBufferPointer { b in
                var page = ogg_page(header: h.baseAddress, header_len: h.count, body: b.baseAddress, body_len: b.count)
                ogg_page_checksum_set(&page)
            }
        }
        let written = header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(last.offset)) }
        guard written == header.count else { throw .writeFailed(path: path, errno: errno) }
        fsync(fd)
        summary.ended = true
        return summary
    }

    private struct Page { var offset: Int; var header: [UInt8]; var body: [UInt8] }

    /// Whether `packet` is an OpusHead (RFC 7845 §5.1: the magic, 19 bytes at least).
    static func isOpusHead(_ packet: some Collection<UInt8>) -> Bool {
        packet.count >= 19 && packet.starts(with: "OpusHead".utf8)
    }

    /// The pre-skip of an OpusHead packet (samples at 48 kHz, little-endian at byte 10).
    static func preSkip(head packet: some RandomAccessCollection<UInt8>) -> Int {
        let at = packet.index(packet.startIndex, offsetBy: 10)
        return Int(packet[at]) | Int(packet[packet.index(after: at)]) << 8
    }

    /// Every page, read as it goes (`OggPageReader`): the summary, and the last page's bytes.
    private static func scan(_ path: String) throws(RecordingError) -> (Summary, Page?) {
        guard let reader = OggPageReader(path: path) else { throw .cannotRead(path: path, errno: errno == 0 ? ENOENT : errno) }
        var summary = Summary(serial: 0, preSkip: 0, lastGranule: 0, pages: 0, ended: false, validBytes: 0)
        var last: Page?
        var page = ogg_page()
        while let offset = reader.next(into: &page) {
            let body = UnsafeBufferPointer(start: page.body, count: page.body_len)
            if summary.pages == 0 {
                guard isOpusHead(body) else { throw .notOggOpus(path: path) }
                summary.serial = ogg_page_serialno(&page)
                summary.preSkip = preSkip(head: body)
            }
            summary.pages += 1
            let g = ogg_page_granulepos(&page)
            if g >= 0 { summary.lastGranule = g }
            summary.ended = ogg_page_eos(&page) != 0
            last = Page(offset: offset, header: Array(UnsafeBufferPointer(start: page.header, count: page.header_len)), body: Array(body))
            summary.validBytes = reader.position
        }
        guard summary.pages > 0 else { throw .notOggOpus(path: path) }
        return (summary, last)
    }
}

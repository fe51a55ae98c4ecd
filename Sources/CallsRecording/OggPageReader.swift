import COgg
import Foundation

/// The pages of an Ogg file, read from the file 64 KiB at a time as they are asked for and
/// parsed by libogg (each page's CRC checked): a long recording is never held whole, only the
/// page being read. Owns the file and libogg's sync state, freed with it.
///
/// Thread rules: one thread at a time.
final class OggPageReader {
    private let file: FileHandle
    private var sync = ogg_sync_state()
    /// Bytes of the file handed to libogg so far, and at most this many.
    private var fed = 0
    private let maxBytes: Int
    /// Where the next page (or garbage) starts in the file.
    private(set) var position = 0
    static let chunkBytes = 64 << 10

    /// Nil when the file cannot be opened. `maxBytes`: read no further than this.
    init?(path: String, maxBytes: Int = .max) {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        self.file = file
        self.maxBytes = maxBytes
        ogg_sync_init(&sync)
    }

    deinit {
        ogg_sync_clear(&sync)
        try? file.close()
    }

    /// The next whole page into `page` (its pointers valid until the next call): its offset in
    /// the file, or nil at the end (a torn last page, or garbage to the end, is no page).
    func next(into page: inout ogg_page) -> Int? {
        while true {
            let n = ogg_sync_pageseek(&sync, &page)
            if n > 0 {
                let at = position
                position += n
                return at
            }
            if n < 0 {  // (garbage skipped)
                position += -n
                continue
            }
            guard fed < maxBytes, let chunk = try? file.read(upToCount: min(Self.chunkBytes, maxBytes - fed)), !chunk.isEmpty else { return nil }
            fed += chunk.count
            chunk.withUnsafeBytes { raw in
                if let src = raw.baseAddress, let dst = ogg_sync_buffer(&sync, raw.count) {
                    memcpy(dst, src, raw.count)
                    ogg_sync_wrote(&sync, raw.count)
                }
            }
        }
    }
}

/// The packets of an Ogg file's first logical stream, read as they are asked for
/// (`OggPageReader`). Thread rules: one thread at a time.
final class OggPacketReader {
    private let pages: OggPageReader
    private var stream = ogg_stream_state()
    private var started = false

    init?(path: String, maxBytes: Int = .max) {
        guard let pages = OggPageReader(path: path, maxBytes: maxBytes) else { return nil }
        self.pages = pages
    }

    deinit { if started { ogg_stream_clear(&stream) } }

    /// The next packet's bytes, nil at the end of the file.
    func next() -> [UInt8]? {
        var packet = ogg_packet()
        while true {
            if started, ogg_stream_packetout(&stream, &packet) == 1 {
                return Array(UnsafeBufferPointer(start: packet.packet, count: packet.bytes))
            }
            var page = ogg_page()
            guard pages.next(into: &page) != nil else { return nil }
            if !started {
                ogg_stream_init(&stream, ogg_page_serialno(&page))
                started = true
            }
            ogg_stream_pagein(&stream, &page)
        }
    }
}

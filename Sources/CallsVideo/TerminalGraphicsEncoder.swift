import CChafa
import CZlib
import Foundation

/// Pictures as a terminal graphics protocol draws them, pixel for pixel rather than as
/// characters: the kitty graphics protocol (RGB, zlib-compressed, base64, in 4096-byte chunks,
/// an image id per tile so a new frame replaces the old, drawn under the text) and DEC sixel (chafa's encoder,
/// `CHAFA_PIXEL_MODE_SIXELS`: palette quantisation is chafa's job, not ours).
///
/// Thread rules: one encoder per thread (the UI's); it keeps one chafa canvas per size.
public final class TerminalGraphicsEncoder {
    private var sixelCanvases: [Int: OpaquePointer] = [:]
    private let termInfo: OpaquePointer?

    public init() {
        // The fallback info knows every sequence chafa can emit (sixel among them): the
        // terminal's support was established by asking it (TerminalGraphics.detect).
        termInfo = chafa_term_db_get_fallback_info(chafa_term_db_get_default())
    }

    deinit {
        for c in sixelCanvases.values { chafa_canvas_unref(c) }
        if let termInfo { chafa_term_info_unref(termInfo) }
    }

    /// The kitty sequence that shows `rgba` (`width` × `height`) as image `id` over `columns` ×
    /// `rows` cells from the cursor, replacing what image `id` showed (placement 1), under the
    /// text (z = -1), without moving the cursor, and with no reply (q = 2). The pixels go as RGB
    /// (f = 24) compressed with zlib (o = z).
    public static func kitty(rgba: [UInt8], width: Int, height: Int, id: UInt32, columns: Int, rows: Int) -> String {
        let pixels = width * height
        var rgb = [UInt8](repeating: 0, count: pixels * 3)
        for i in 0..<min(pixels, rgba.count / 4) {
            rgb[3 * i] = rgba[4 * i]; rgb[3 * i + 1] = rgba[4 * i + 1]; rgb[3 * i + 2] = rgba[4 * i + 2]
        }
        var packed = [UInt8](repeating: 0, count: Int(compressBound(uLong(rgb.count))))
        var packedLength = uLongf(packed.count)
        let ok = packed.withUnsafeMutableBufferPointer { d in
            rgb.withUnsafeBufferPointer { s in compress2(d.baseAddress, &packedLength, s.baseAddress, uLong(s.count), 1) }
        }
        let compressed = ok == Z_OK
        let payload = (compressed ? Data(packed[0..<Int(packedLength)]) : Data(rgb)).base64EncodedString()
        let chunk = 4096
        var out = ""
        out.reserveCapacity(payload.utf8.count + payload.utf8.count / chunk * 16 + 96)
        var start = payload.startIndex
        var first = true
        while start < payload.endIndex || first {
            let end = payload.index(start, offsetBy: chunk, limitedBy: payload.endIndex) ?? payload.endIndex
            let more = end < payload.endIndex ? 1 : 0
            if first {
                out += "\u{1B}_Ga=T,f=24,\(compressed ? "o=z," : "")s=\(width),v=\(height),i=\(id),p=1,c=\(columns),r=\(rows),z=-1,C=1,q=2,m=\(more);"
                first = false
            } else {
                out += "\u{1B}_Gm=\(more);"
            }
            out += payload[start..<end]
            out += "\u{1B}\\"
            start = end
        }
        return out
    }

    /// The kitty sequence that deletes image `id` (and its placements); `nil`: every image.
    public static func kittyDelete(id: UInt32?) -> String {
        id.map { "\u{1B}_Ga=d,d=I,i=\($0),q=2\u{1B}\\" } ?? "\u{1B}_Ga=d,d=A,q=2\u{1B}\\"
    }

    /// The sixel image (DCS … ST) of `rgba` (`width` × `height`) for `columns` × `rows` cells of
    /// `cellWidth` × `cellHeight` pixels; nil when chafa cannot make one.
    public func sixel(rgba: [UInt8], width: Int, height: Int, columns: Int, rows: Int, cellWidth: Int, cellHeight: Int) -> String? {
        guard let termInfo, columns > 0, rows > 0, width > 0, height > 0, rgba.count >= width * height * 4,
              let canvas = sixelCanvas(columns: columns, rows: rows, cellWidth: cellWidth, cellHeight: cellHeight) else { return nil }
        rgba.withUnsafeBufferPointer { p in
            chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, p.baseAddress, Int32(width), Int32(height), Int32(width * 4))
        }
        guard let g = chafa_canvas_print(canvas, termInfo) else { return nil }
        defer { g_string_free(g, 1) }
        return String(cString: g.pointee.str)
    }

    private func sixelCanvas(columns: Int, rows: Int, cellWidth: Int, cellHeight: Int) -> OpaquePointer? {
        let key = columns << 32 | rows << 16 | cellWidth << 8 | cellHeight
        if let c = sixelCanvases[key] { return c }
        if sixelCanvases.count > 16 {
            for c in sixelCanvases.values { chafa_canvas_unref(c) }
            sixelCanvases = [:]
        }
        let config = chafa_canvas_config_new()
        defer { chafa_canvas_config_unref(config) }
        chafa_canvas_config_set_pixel_mode(config, CHAFA_PIXEL_MODE_SIXELS)
        chafa_canvas_config_set_geometry(config, Int32(columns), Int32(rows))
        chafa_canvas_config_set_cell_geometry(config, Int32(cellWidth), Int32(cellHeight))
        chafa_canvas_config_set_canvas_mode(config, CHAFA_CANVAS_MODE_TRUECOLOR)
        chafa_canvas_config_set_dither_mode(config, CHAFA_DITHER_MODE_NONE)
        chafa_canvas_config_set_preprocessing_enabled(config, 0)
        guard let c = chafa_canvas_new(config) else { return nil }
        sixelCanvases[key] = c
        return c
    }
}

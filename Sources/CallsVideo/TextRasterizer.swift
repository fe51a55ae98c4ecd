import CFreeType
import CallsCore
#if canImport(Glibc)
import Glibc
#endif

/// Text drawn into pixels: FreeType renders the glyphs of a font fontconfig chooses (monospace
/// by default; Debian's `fonts-dejavu-core`), at a pixel size, into an 8-bit coverage bitmap.
/// Glyphs are rendered once per character and kept.
///
/// Thread rules: one thread at a time (a FreeType face is not thread-safe); `fontFile(for:)`
/// from any.
public final class TextRasterizer {
    /// A line of text's coverage: 0 (background) … 255 (ink), `width × height`, row-major.
    public struct Bitmap: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public var coverage: [UInt8]

        /// The coverage at (x, y).
        public subscript(x: Int, y: Int) -> UInt8 { coverage[y * width + x] }
    }

    private struct Glyph {
        var width = 0, rows = 0, left = 0, top = 0, advance = 0
        var pixels: [UInt8] = []
    }

    public let pixelSize: Int
    private var library: FT_Library?
    private var face: FT_Face?
    private let ascender: Int
    private let lineHeight: Int
    private var glyphs: [UInt32: Glyph] = [:]

    /// Opens the font fontconfig picks for `family` at `pixelSize`; nil when there is no font
    /// (`scripts/install-deps.sh` installs one) or FreeType cannot open it.
    public init?(pixelSize: Int, family: String = "monospace") {
        guard pixelSize >= 4, pixelSize <= 512, let path = Self.fontFile(for: family) else { return nil }
        var lib: FT_Library?
        guard FT_Init_FreeType(&lib) == 0, let lib else { return nil }
        var f: FT_Face?
        guard FT_New_Face(lib, path, 0, &f) == 0, let f, FT_Set_Pixel_Sizes(f, 0, FT_UInt(pixelSize)) == 0 else {
            if let f { FT_Done_Face(f) }
            FT_Done_FreeType(lib)
            return nil
        }
        library = lib
        face = f
        self.pixelSize = pixelSize
        var asc: Int32 = 0, height: Int32 = 0
        callroom_face_metrics(f, &asc, &height)
        ascender = Int(asc)
        lineHeight = max(1, Int(height))
    }

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }

    /// The font file fontconfig matches to `family` ("monospace", "DejaVu Sans Mono:bold", …),
    /// or nil. Looked up once per family per process (fontconfig loads its configuration).
    public static func fontFile(for family: String) -> String? {
        fontFiles.withLock { cache in
            if let known = cache[family] { return known }
            var found: String?
            if let c = callroom_font_file(family) {
                found = String(cString: c)
                free(c)
            }
            cache[family] = .some(found)
            return found
        }
    }
    private static let fontFiles = Locked<[String: String?]>([:])

    /// `text` on one line, as wide as its glyphs advance and one line high (ascender to
    /// descender). Characters the font lacks draw as its missing-glyph box.
    public func render(_ text: String) -> Bitmap {
        let line = text.unicodeScalars.map { glyph($0.value) }
        let width = max(1, line.reduce(0) { $0 + $1.advance })
        var out = [UInt8](repeating: 0, count: width * lineHeight)
        var pen = 0
        for g in line {
            for row in 0..<g.rows {
                let y = ascender - g.top + row
                guard y >= 0, y < lineHeight else { continue }
                for col in 0..<g.width {
                    let x = pen + g.left + col
                    guard x >= 0, x < width else { continue }
                    let v = g.pixels[row * g.width + col]
                    if v > out[y * width + x] { out[y * width + x] = v }
                }
            }
            pen += g.advance
        }
        return Bitmap(width: width, height: lineHeight, coverage: out)
    }

    private func glyph(_ code: UInt32) -> Glyph {
        if let g = glyphs[code] { return g }
        var g = Glyph()
        var slot = callroom_glyph()
        if let face, callroom_render_glyph(face, UInt(code), &slot) == 0 {
            g.width = Int(slot.width)
            g.rows = Int(slot.rows)
            g.left = Int(slot.left)
            g.top = Int(slot.top)
            g.advance = Int(slot.advance)
            if let buffer = slot.buffer, g.width > 0, g.rows > 0 {
                let pitch = Int(slot.pitch)
                g.pixels.reserveCapacity(g.width * g.rows)
                for row in 0..<g.rows {
                    let start = pitch >= 0 ? row * pitch : (g.rows - 1 - row) * -pitch
                    for col in 0..<g.width { g.pixels.append(buffer[start + col]) }
                }
            } else {
                g.width = 0
                g.rows = 0
            }
        }
        glyphs[code] = g
        return g
    }
}

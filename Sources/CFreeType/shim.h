#ifndef CALLROOM_CFREETYPE_SHIM_H
#define CALLROOM_CFREETYPE_SHIM_H
/* FreeType draws glyphs into pixels; fontconfig finds the font file for a family name. */
#include <ft2build.h>
#include FT_FREETYPE_H
#include <fontconfig/fontconfig.h>
#include <stdlib.h>
#include <string.h>

/* The file fontconfig chooses for `family` (e.g. "monospace"), malloc'd, or NULL. */
static inline char *callroom_font_file(const char *family) {
    FcConfig *config = FcInitLoadConfigAndFonts();
    if (!config) return NULL;
    char *out = NULL;
    FcPattern *pattern = FcNameParse((const FcChar8 *)family);
    if (pattern) {
        FcConfigSubstitute(config, pattern, FcMatchPattern);
        FcDefaultSubstitute(pattern);
        FcResult result = FcResultNoMatch;
        FcPattern *match = FcFontMatch(config, pattern, &result);
        if (match) {
            FcChar8 *file = NULL;
            if (FcPatternGetString(match, FC_FILE, 0, &file) == FcResultMatch && file) out = strdup((const char *)file);
            FcPatternDestroy(match);
        }
        FcPatternDestroy(pattern);
    }
    FcConfigDestroy(config);
    return out;
}

/* The glyph slot's fields Swift needs (FT_GlyphSlotRec is large; this keeps the edge small). */
struct callroom_glyph {
    const unsigned char *buffer;
    int width, rows, pitch, left, top, advance;
};

/* Loads and renders `code` (8-bit grey) into the face's slot; 0 or a FreeType error. */
static inline int callroom_render_glyph(FT_Face face, unsigned long code, struct callroom_glyph *g) {
    FT_Error e = FT_Load_Char(face, code, FT_LOAD_RENDER | FT_LOAD_TARGET_NORMAL);
    if (e) return e;
    FT_GlyphSlot s = face->glyph;
    if (s->bitmap.pixel_mode != FT_PIXEL_MODE_GRAY) return -1;
    g->buffer = s->bitmap.buffer;
    g->width = (int)s->bitmap.width;
    g->rows = (int)s->bitmap.rows;
    g->pitch = s->bitmap.pitch;
    g->left = s->bitmap_left;
    g->top = s->bitmap_top;
    g->advance = (int)(s->advance.x >> 6);
    return 0;
}

/* Ascender and line height in pixels at the face's current size. */
static inline void callroom_face_metrics(FT_Face face, int *ascender, int *height) {
    *ascender = (int)(face->size->metrics.ascender >> 6);
    *height = (int)((face->size->metrics.ascender - face->size->metrics.descender) >> 6);
}
#endif

#ifndef CALLROOM_CNCURSES_SHIM_H
#define CALLROOM_CNCURSES_SHIM_H
#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <ncursesw/curses.h>

static const attr_t callroom_a_bold = A_BOLD;
static const attr_t callroom_a_reverse = A_REVERSE;
static const attr_t callroom_a_dim = A_DIM;
static const attr_t callroom_a_underline = A_UNDERLINE;
static const mmask_t callroom_button1_clicked = BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_RELEASED;
static const mmask_t callroom_all_mouse_events = ALL_MOUSE_EVENTS;
static inline WINDOW *callroom_stdscr(void) { return stdscr; }
static inline int callroom_colors(void) { return COLORS; }
static inline attr_t callroom_color_pair(int n) { return COLOR_PAIR(n); }
/* Writes one wide character with attributes at y,x. */
static inline int callroom_put_wch(int y, int x, wchar_t ch, attr_t attr, short pair) {
    cchar_t c; wchar_t s[2] = { ch, 0 };
    setcchar(&c, s, attr, pair, NULL);
    return mvadd_wch(y, x, &c);
}
#endif

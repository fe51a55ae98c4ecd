#ifndef CALLROOM_CNCURSES_SHIM_H
#define CALLROOM_CNCURSES_SHIM_H
#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <stddef.h>
#include <wchar.h>
#include <ncursesw/curses.h>
#include <ncursesw/term.h>

static const attr_t callroom_a_bold = A_BOLD;
static const attr_t callroom_a_reverse = A_REVERSE;
static const attr_t callroom_a_dim = A_DIM;
static const attr_t callroom_a_underline = A_UNDERLINE;
/* Button 1 press and release (reported separately: mouseinterval(0)), the wheel (buttons 4, 5). */
static const mmask_t callroom_mouse_mask = BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED;
static const mmask_t callroom_button1_pressed = BUTTON1_PRESSED;
static const mmask_t callroom_button1_released = BUTTON1_RELEASED;
static const mmask_t callroom_button1_clicked = BUTTON1_CLICKED;
static const mmask_t callroom_button4_pressed = BUTTON4_PRESSED;
static const mmask_t callroom_button5_pressed = BUTTON5_PRESSED;
static inline WINDOW *callroom_stdscr(void) { return stdscr; }
static inline int callroom_colors(void) { return COLORS; }
static inline attr_t callroom_color_pair(int n) { return COLOR_PAIR(n); }

/* Writes one grapheme (up to 4 code points: a base and its combining marks) with attributes at y,x. */
static inline int callroom_put_wchs(int y, int x, const wchar_t *chars, int count, attr_t attr, short pair) {
    cchar_t c; wchar_t s[5] = { 0, 0, 0, 0, 0 };
    for (int i = 0; i < count && i < 4; i++) s[i] = chars[i];
    setcchar(&c, s, attr, pair, NULL);
    return mvadd_wch(y, x, &c);
}

/* Same, with an extended colour pair (ncurses 6: pairs past 32767, picture colours). */
static inline int callroom_put_wchs_pair(int y, int x, const wchar_t *chars, int count, attr_t attr, int pair) {
    cchar_t c; wchar_t s[5] = { 0, 0, 0, 0, 0 };
    for (int i = 0; i < count && i < 4; i++) s[i] = chars[i];
    setcchar(&c, s, attr, 0, &pair);
    return mvadd_wch(y, x, &c);
}
static inline int callroom_color_pairs(void) { return COLOR_PAIRS; }
/* Key codes of our own for the bracketed-paste markers (past ncurses' KEY_MAX). */
static const int callroom_key_paste_start = KEY_MAX + 1;
static const int callroom_key_paste_end = KEY_MAX + 2;
/* Home and End in every encoding terminals send (whatever TERM's terminfo says), and the paste
   markers, as keys: an unknown sequence would otherwise arrive as Esc and key commands. */
static inline void callroom_define_keys(void) {
    const char *home[] = { "\033[1~", "\033[7~", "\033[H", "\033OH" };
    const char *end[] = { "\033[4~", "\033[8~", "\033[F", "\033OF" };
    for (int i = 0; i < 4; i++) {
        if (key_defined(home[i]) <= 0) define_key(home[i], KEY_HOME);
        if (key_defined(end[i]) <= 0) define_key(end[i], KEY_END);
    }
    define_key("\033[200~", callroom_key_paste_start);
    define_key("\033[201~", callroom_key_paste_end);
}
static inline int callroom_init_pair(int pair, int fg, int bg) { return init_extended_pair(pair, fg, bg); }

/* The terminal's capabilities, read from terminfo before the screen is set up:
   1 when TERM can address the cursor (cup), 0 when it cannot, -1 when TERM is unknown. */
static inline int callroom_terminal_can_address_cursor(void) {
    int err = 0;
    if (setupterm(NULL, 1, &err) != OK) return -1;
    char *cup = tigetstr("cup");
    int ok = cup != NULL && cup != (char *)-1;
    del_curterm(cur_term);
    return ok;
}
/* 1 when the terminal has an alternate screen (smcup), so leaving restores what was there. */
static inline int callroom_terminal_has_alternate_screen(void) {
    char *s = tigetstr("smcup");
    return s != NULL && s != (char *)-1;
}

/* 1 when the running terminal's terminfo has string capability `name` (e.g. Ms: OSC 52). */
static inline int callroom_terminal_has_string_capability(const char *name) {
    char *s = tigetstr(name);
    return s != NULL && s != (char *)-1;
}

/* wcwidth(3) in a UTF-8 locale whatever the process locale is: the cells a terminal gives a
   code point (2 for East Asian wide, 0 for combining marks, -1 for controls). */
static inline int callroom_wcwidth(unsigned int codepoint) {
    static locale_t utf8 = (locale_t)0;
    if (utf8 == (locale_t)0) utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (utf8 == (locale_t)0) return -2;
    locale_t old = uselocale(utf8);
    int w = wcwidth((wchar_t)codepoint);
    uselocale(old);
    return w;
}
#endif

/*
 * pipeline_core.source._framing: the multiline presets' tests of a read's lines, in one pass
 * over its bytes.
 *
 * The same rules as pipeline_core/source/_preset_lines.py, which stays the reference (and the
 * fallback where this module is not built): tests/pipeline_core/source/test_framing_compiled.py
 * checks the two agree on logs written by real programs and on generated ones. Python gives
 * the preset words (set_words) so that they are written down once.
 *
 *   line_starts(data) -> bytearray                    every line's first offset, native int64
 *   newline_finder(name=None) -> (name, names)        which vector width finds the newlines
 *   preset_continuing(data, starts, flags) -> bytearray
 *                                                 per line, 1 if a preset says it continues
 *                                                 the line before (flags: PYTHON | JAVA | GO)
 *   event_runs(marks, starts, size, ...)              a read's events of several lines
 *   frame_lines(data, flags, max_lines, max_bytes, lookahead)
 *                                                 line_starts, preset_continuing and
 *                                                 event_runs in one call
 *   read_judged(fd, offset, size, flags, ...)     a read, and one_line_events' and
 *                                                 frame_lines' answers for its whole lines,
 *                                                 in one release of the GIL
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memrchr */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define PRESET_PYTHON 1
#define PRESET_JAVA 2
#define PRESET_GO 4

/* The groups a word belongs to (set_words gives each word's). */
#define GROUP_PYTHON 1
#define GROUP_JAVA 2
#define GROUP_TRACEBACK_HEAD 4
#define GROUP_CHAINED 8
#define GROUP_CONTEXT_HEAD 16
#define GROUP_GO 32

#define MAX_WORDS 32
#define WORD_PREFIX 16
#define CONTEXT_LINES 64
#define PREFETCH_LINES 8

typedef struct {
    char bytes[WORD_PREFIX];
    Py_ssize_t length;
    int groups;
} Word;

static Word words[MAX_WORDS];
static int word_count = 0;
static unsigned char word_heads[256];

static const char TRACEBACK[] = "Traceback (most recent call last):";
static const char DATAFRAME_CONTEXT[] = "== DataFrame ==";
static const char CALLED_FROM[] = "\" was called from";

static unsigned char is_word[256];       /* [A-Za-z0-9_] */
static unsigned char is_identifier[256]; /* [A-Za-z0-9_.] */
static unsigned char is_identifier_start[256]; /* [A-Za-z_] */
static unsigned char is_java_name[256];  /* [A-Za-z0-9_$.] */
static unsigned char is_go_name[256];    /* [A-Za-z0-9_] and . / * ( ) [ ] { } - */

static void init_tables(void) {
    for (int c = 0; c < 256; c++) {
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        int digit = c >= '0' && c <= '9';
        is_word[c] = alpha || digit || c == '_';
        is_identifier[c] = is_word[c] || c == '.';
        is_identifier_start[c] = alpha || c == '_';
        is_java_name[c] = is_word[c] || c == '$' || c == '.';
        is_go_name[c] = is_word[c] || (c != 0 && strchr("./*()[]{}-", c) != NULL);
    }
}

static int is_blank_space(unsigned char c) { return c == ' ' || c == '\t'; }

/* The index of the word line [s, size) starts with, or -1. */
static int word_at(const unsigned char *data, Py_ssize_t size, Py_ssize_t s) {
    if (!word_heads[data[s]]) return -1;
    for (int w = 0; w < word_count; w++) {
        Py_ssize_t n = words[w].length;
        if (words[w].bytes[0] == (char)data[s] && s + n <= size &&
            memcmp(data + s, words[w].bytes, (size_t)n) == 0)
            return w;
    }
    return -1;
}

/* A Python exception's line: [A-Za-z_][\w.]*(?::[ \t].*|:?)\r? over [s, e). */
static int python_exception(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    if (s >= e || !is_identifier_start[data[s]]) return 0;
    Py_ssize_t p = s + 1;
    while (p < e && is_identifier[data[p]]) p++;
    Py_ssize_t rest = e - p;
    if (rest == 0) return 1;
    unsigned char c = data[p];
    if (c == '\r') return rest == 1;
    if (c != ':') return 0;
    if (rest == 1) return 1;
    unsigned char after = data[p + 1];
    return is_blank_space(after) || (rest == 2 && after == '\r');
}

/* Whether [s, e) holds `word`: each place its first byte is (memchr) compared whole. Not
   memmem: for a word of 32 bytes or more, glibc's builds a table of 256 shifts each call,
   which cost more than a log line's search (case 14's traceback file: a third of the
   judging). */
static int contains(const unsigned char *data, Py_ssize_t s, Py_ssize_t e, const char *word) {
    size_t n = strlen(word);
    if (e - s < (Py_ssize_t)n) return 0;
    const unsigned char *at = data + s, *last = data + e - n;
    while (at <= last && (at = memchr(at, word[0], (size_t)(last - at) + 1)) != NULL) {
        if (memcmp(at, word, n) == 0) return 1;
        at++;
    }
    return 0;
}

/* A Java exception's line: (?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable|Failure)[\w$]*
   (?::.*)?\r? over [s, e). */
static int java_exception(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t p = s, segment = s, dots = 0;
    while (p < e && is_java_name[data[p]]) {
        if (data[p] == '.') {
            if (p == segment) return 0; /* an empty name before a dot */
            dots++;
            segment = p + 1;
        }
        p++;
    }
    if (!dots || p == segment) return 0;
    if (!(contains(data, segment, p, "Exception") || contains(data, segment, p, "Error") ||
          contains(data, segment, p, "Throwable") || contains(data, segment, p, "Failure")))
        return 0;
    if (p == e) return 1;
    if (data[p] == ':') return 1;
    return data[p] == '\r' && p + 1 == e;
}

/* A goroutine dump's function line over [s, e): a run of is_go_name bytes holding a '(' after
   its first byte, and the line ending with ')' (or ")\r"): _GO_FUNCTION in _preset_lines.py. */
static int go_function(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t close;
    if (e - s >= 1 && data[e - 1] == ')') close = e - 1;
    else if (e - s >= 2 && data[e - 1] == '\r' && data[e - 2] == ')') close = e - 2;
    else return 0;
    Py_ssize_t run = s;
    while (run < e && is_go_name[data[run]]) run++;
    Py_ssize_t limit = run < close ? run : close;
    for (Py_ssize_t p = s + 1; p < limit; p++)
        if (data[p] == '(') return 1;
    return 0;
}

/* The line's end less one trailing carriage return. */
static Py_ssize_t without_cr(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    return (e > s && data[e - 1] == '\r') ? e - 1 : e;
}

/* == SQL\b.* ==\r? over [s, e) */
static int sql_context(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    if (e - s < 6 || memcmp(data + s, "== SQL", 6) != 0) return 0;
    if (s + 6 < e && is_word[data[s + 6]]) return 0;
    Py_ssize_t b = without_cr(data, s, e);
    return b - 3 >= s + 6 && memcmp(data + b - 3, " ==", 3) == 0;
}

/* ".*" was called from\r? over [s, e) */
static int called_from(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t n = (Py_ssize_t)strlen(CALLED_FROM);
    Py_ssize_t b = without_cr(data, s, e);
    return b - s >= n + 1 && data[s] == '"' && memcmp(data + b - n, CALLED_FROM, (size_t)n) == 0;
}

/* [ \t]*\^+[ \t]*\r? over [s, e) */
static int carets(const unsigned char *data, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t p = s;
    while (p < e && is_blank_space(data[p])) p++;
    Py_ssize_t first = p;
    while (p < e && data[p] == '^') p++;
    if (p == first) return 0;
    while (p < e && is_blank_space(data[p])) p++;
    if (p < e && data[p] == '\r') p++;
    return p == e;
}

/* Stores at out[n...] the offset after each newline of the 64-byte block at `at` (its bit in
   mask) and returns n past them. The first four are stored whether the block has them or not
   (room for 64 is left; those past the count are overwritten later) and n moved by the count:
   a loop that ran once per newline would end at a different count each block, which the
   processor mispredicts at about a newline a line. More than four take a loop. */
static inline Py_ssize_t store_newlines(int64_t *out, Py_ssize_t n, Py_ssize_t at,
                                        uint64_t mask) {
    int count = __builtin_popcountll(mask);
    int64_t base = (int64_t)at + 1;
    /* ctz of 0 is undefined: the top bit keeps it 63 where mask ran out (a value not kept) */
    for (int k = 0; k < 4; k++) {
        out[n + k] = base + __builtin_ctzll(mask | (1ULL << 63));
        mask &= mask - 1;
    }
    if (count > 4) {
        Py_ssize_t k = n + 4;
        while (mask) {
            out[k++] = base + __builtin_ctzll(mask);
            mask &= mask - 1;
        }
    }
    return n + count;
}

/* Writes to out[n, capacity) the offset after each newline of data[*from, size), 64 bytes
   at a time: a block's newlines as one 64-bit mask, whose bits are walked; returns the new n.
   Stops (*from where it did) once fewer than 64 slots are left, else at the end (*from ==
   size). Needs no GIL. The mask is made by the widest compare the processor has (one
   AVX-512BW compare, two AVX2 or four SSE2: every x86-64 has SSE2), chosen once at import
   (choose_fill); elsewhere byte by byte. */
#define FILL_AFTER_NEWLINES(name, attributes, prepare, block_mask)                          \
    attributes static Py_ssize_t name(const unsigned char *data, Py_ssize_t size,          \
                                      Py_ssize_t *from, int64_t *out, Py_ssize_t n,        \
                                      Py_ssize_t capacity) {                               \
        Py_ssize_t i = *from;                                                              \
        prepare;                                                                           \
        for (; i + 64 <= size; i += 64) {                                                  \
            if (n + 64 > capacity) {                                                       \
                *from = i;                                                                 \
                return n;                                                                  \
            }                                                                              \
            const unsigned char *block = data + i;                                         \
            n = store_newlines(out, n, i, (block_mask));                                   \
        }                                                                                  \
        if (size - i > capacity - n) {                                                     \
            *from = i;                                                                     \
            return n;                                                                      \
        }                                                                                  \
        for (; i < size; i++)                                                              \
            if (data[i] == '\n') out[n++] = (int64_t)(i + 1);                              \
        *from = size;                                                                      \
        return n;                                                                          \
    }

/* Over data[0, size): counts the lines and the longest (with its newline), and tells whether
   the byte after a newline may start a continuation (may_continue), stopping at the block
   where one may; 64 bytes a step as FILL_AFTER_NEWLINES, each newline's work by stores and
   conditional moves, not branches. The last line's part after the last newline is left to
   the caller (line_start says where it begins). */
#define SCAN_ONE_LINES(name, attributes, prepare, block_mask)                               \
    attributes static int name(const unsigned char *data, Py_ssize_t size,                 \
                               const unsigned char *may_continue, Py_ssize_t *lines_out,   \
                               Py_ssize_t *longest_out, Py_ssize_t *line_start_out) {      \
        Py_ssize_t i = 0, lines = 0, longest = 0, line_start = 0, last = size - 1;         \
        int continues = 0;                                                                 \
        prepare;                                                                           \
        for (; !continues && i + 64 <= size; i += 64) {                                    \
            const unsigned char *block = data + i;                                         \
            uint64_t mask = (block_mask);                                                  \
            while (mask) {                                                                 \
                Py_ssize_t next = i + __builtin_ctzll(mask) + 1;                           \
                Py_ssize_t length = next - line_start;                                     \
                longest = length > longest ? length : longest;                             \
                line_start = next;                                                         \
                lines++;                                                                   \
                continues |= (next <= last) & may_continue[data[next <= last ? next : last]]; \
                mask &= mask - 1;                                                          \
            }                                                                              \
        }                                                                                  \
        for (; !continues && i < size; i++) {                                              \
            if (data[i] != '\n') continue;                                                 \
            Py_ssize_t next = i + 1;                                                       \
            if (next - line_start > longest) longest = next - line_start;                  \
            line_start = next;                                                             \
            lines++;                                                                       \
            if (next < size && may_continue[data[next]]) continues = 1;                    \
        }                                                                                  \
        *lines_out = lines;                                                                \
        *longest_out = longest;                                                            \
        *line_start_out = line_start;                                                      \
        return continues;                                                                  \
    }

typedef int (*ScanOneLines)(const unsigned char *, Py_ssize_t, const unsigned char *,
                            Py_ssize_t *, Py_ssize_t *, Py_ssize_t *);

typedef Py_ssize_t (*FillAfterNewlines)(const unsigned char *, Py_ssize_t, Py_ssize_t *,
                                        int64_t *, Py_ssize_t, Py_ssize_t);

/* Without vector compares: eight bytes at a time in a 64-bit word (each byte's high bit set
   where it is a newline, exactly, then the eight bits gathered by one multiplication). */
static uint64_t scalar_mask(const unsigned char *block) {
    uint64_t mask = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
    for (int k = 0; k < 8; k++) {
        uint64_t word;
        memcpy(&word, block + 8 * k, 8);
        uint64_t t = word ^ 0x0a0a0a0a0a0a0a0aULL; /* a newline's byte is 0 */
        uint64_t zero = ~(((t & low7) + low7) | t | low7);
        mask |= (((zero >> 7) * 0x0102040810204080ULL) >> 56) << (8 * k);
    }
#else
    for (int k = 0; k < 64; k++) mask |= (uint64_t)(block[k] == '\n') << k;
#endif
    return mask;
}
FILL_AFTER_NEWLINES(fill_scalar, , (void)0, scalar_mask(block))
SCAN_ONE_LINES(scan_scalar, , (void)0, scalar_mask(block))

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SSE2_MASK(at)                                                                    \
    ((uint64_t)(unsigned)_mm_movemask_epi8(                                               \
        _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(at)), newline)))
FILL_AFTER_NEWLINES(fill_sse2, , const __m128i newline = _mm_set1_epi8('\n'),
                    SSE2_MASK(block) | SSE2_MASK(block + 16) << 16 |
                        SSE2_MASK(block + 32) << 32 | SSE2_MASK(block + 48) << 48)
SCAN_ONE_LINES(scan_sse2, , const __m128i newline = _mm_set1_epi8('\n'),
               SSE2_MASK(block) | SSE2_MASK(block + 16) << 16 | SSE2_MASK(block + 32) << 32 |
                   SSE2_MASK(block + 48) << 48)
#define AVX2_MASK(at)                                                                    \
    ((uint64_t)(unsigned)_mm256_movemask_epi8(                                            \
        _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(at)), newline)))
FILL_AFTER_NEWLINES(fill_avx2, __attribute__((target("avx2,popcnt,bmi"))),
                    const __m256i newline = _mm256_set1_epi8('\n'),
                    AVX2_MASK(block) | AVX2_MASK(block + 32) << 32)
SCAN_ONE_LINES(scan_avx2, __attribute__((target("avx2,popcnt,bmi"))),
               const __m256i newline = _mm256_set1_epi8('\n'),
               AVX2_MASK(block) | AVX2_MASK(block + 32) << 32)
FILL_AFTER_NEWLINES(fill_avx512, __attribute__((target("avx512f,avx512bw,popcnt,bmi"))),
                    const __m512i newline = _mm512_set1_epi8('\n'),
                    (uint64_t)_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)block),
                                                     newline))
SCAN_ONE_LINES(scan_avx512, __attribute__((target("avx512f,avx512bw,popcnt,bmi"))),
               const __m512i newline = _mm512_set1_epi8('\n'),
               (uint64_t)_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)block),
                                                newline))
#endif

typedef struct {
    const char *name;
    FillAfterNewlines fill;
    ScanOneLines scan;
    int supported;
} NewlineFinder;

/* Widest first; choose_fill marks those the processor has. */
static NewlineFinder finders[] = {
#if defined(__x86_64__) && defined(__GNUC__)
    {"avx512", fill_avx512, scan_avx512, 0},
    {"avx2", fill_avx2, scan_avx2, 0},
    {"sse2", fill_sse2, scan_sse2, 0},
#endif
    {"scalar", fill_scalar, scan_scalar, 1},
};
#define FINDERS ((int)(sizeof(finders) / sizeof(finders[0])))

static int finder = FINDERS - 1;
#define fill_after_newlines (finders[finder].fill)
#define scan_one_lines (finders[finder].scan)

static void choose_fill(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    /* popcnt and bmi (tzcnt) come with every processor that has AVX2; asked all the same */
    int counts = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
    finders[0].supported = counts && __builtin_cpu_supports("avx512bw");
    finders[1].supported = counts && __builtin_cpu_supports("avx2");
    finders[2].supported = 1;
#endif
    for (finder = 0; !finders[finder].supported; finder++) {
    }
}

/* newline_finder(name=None) -> (the name in use, the names this processor has): with a name,
   use that one from now on (for tests: each is checked against the others). */
static PyObject *newline_finder(PyObject *self, PyObject *args) {
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z", &name)) return NULL;
    if (name != NULL) {
        int chosen = -1;
        for (int k = 0; k < FINDERS; k++)
            if (finders[k].supported && strcmp(finders[k].name, name) == 0) chosen = k;
        if (chosen < 0) {
            PyErr_Format(PyExc_ValueError, "no newline finder %s on this processor", name);
            return NULL;
        }
        finder = chosen;
    }
    PyObject *names = PyTuple_New(0);
    if (names == NULL) return NULL;
    for (int k = 0; k < FINDERS; k++) {
        if (!finders[k].supported) continue;
        PyObject *item = PyUnicode_FromString(finders[k].name);
        if (item == NULL || _PyTuple_Resize(&names, PyTuple_GET_SIZE(names) + 1) < 0) {
            Py_XDECREF(item);
            Py_XDECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, PyTuple_GET_SIZE(names) - 1, item);
    }
    return Py_BuildValue("(sN)", finders[finder].name, names);
}

static PyObject *line_starts(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t size = view.len;
    /* Room for lines of 32 bytes on average; more is made as it fills (with the GIL). */
    Py_ssize_t capacity = size / 32 + 32;
    PyObject *result = PyByteArray_FromStringAndSize(NULL, capacity * (Py_ssize_t)sizeof(int64_t));
    Py_ssize_t count = 0, from = 0;
    if (result != NULL && size) {
        ((int64_t *)PyByteArray_AS_STRING(result))[0] = 0;
        count = 1;
        while (from < size) {
            int64_t *out = (int64_t *)PyByteArray_AS_STRING(result);
            Py_BEGIN_ALLOW_THREADS
            count = fill_after_newlines(data, size, &from, out, count, capacity);
            Py_END_ALLOW_THREADS
            if (from < size) {
                capacity *= 2;
                if (PyByteArray_Resize(result, capacity * (Py_ssize_t)sizeof(int64_t)) < 0) {
                    Py_CLEAR(result);
                    break;
                }
            }
        }
        if (result != NULL && data[size - 1] == '\n') count--; /* the last newline ends it */
    }
    if (result != NULL && PyByteArray_Resize(result, count * (Py_ssize_t)sizeof(int64_t)) < 0)
        Py_CLEAR(result);
    PyBuffer_Release(&view);
    return result;
}

/* Where no line of data may continue the one before by the Python or Java preset (none starts
   with a byte a continuation or a preset's word starts with: most logs of one-line events):
   (lines, longest line with its newline); None where one may. One pass, no array. */
/* one_line_events' work, needing no GIL: 1 with the lines and the longest line (with its
   newline) where no line may continue the one before, else 0. */
static int one_lines_of(const unsigned char *data, Py_ssize_t size, Py_ssize_t *lines_out,
                        Py_ssize_t *longest_out) {
    unsigned char may_continue[256];
    memcpy(may_continue, word_heads, sizeof may_continue);
    may_continue[' '] = may_continue['\t'] = may_continue['\n'] = may_continue['\r'] = 1;
    Py_ssize_t lines = 0, longest = 0, line_start = 0;
    if (size && may_continue[data[0]]) return 0;
    if (scan_one_lines(data, size, may_continue, &lines, &longest, &line_start)) return 0;
    if (line_start < size) { /* a last line without its newline */
        lines++;
        if (size - line_start > longest) longest = size - line_start;
    }
    *lines_out = lines;
    *longest_out = longest;
    return 1;
}

static PyObject *one_line_events(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Py_ssize_t lines = 0, longest = 0;
    int one_line = 0;
    const unsigned char *data = view.buf;
    if (!view.len || !(word_heads[data[0]] || data[0] == ' ' || data[0] == '\t' ||
                       data[0] == '\n' || data[0] == '\r')) {
        /* the GIL is let go only for a scan: a read that may continue at once needs none */
        Py_BEGIN_ALLOW_THREADS
        one_line = one_lines_of(data, view.len, &lines, &longest);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (!one_line) Py_RETURN_NONE;
    return Py_BuildValue("nn", lines, longest);
}

/* A read's lines being judged: their offsets, each one's kind and word groups, and the
   marks of those that continue the line before. Needs no GIL. */
enum { INDENTED = 1, BLANK = 2, CONTEXT = 4 };
#define CARRIAGE_RETURN 8 /* kind_of_first only: blank if the line is that byte alone */
static unsigned char kind_of_first[256]; /* a line's kind by its first byte */

static void init_kinds(void) {
    kind_of_first[' '] = kind_of_first['\t'] = INDENTED;
    kind_of_first['\n'] = BLANK;
    kind_of_first['\r'] = CARRIAGE_RETURN;
}

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    const int64_t *starts;
    unsigned char *continues, *kind, *groups;
    Py_ssize_t count; /* lines known so far (all of them once judged) */
    int flags;
    Py_ssize_t last_plain; /* the last line judged not indented or blank */
    int context_heads;
} Judged;

/* Where line i ends (its newline, or the data's end). */
static Py_ssize_t line_end(const Judged *j, Py_ssize_t i) {
    if (i + 1 < j->count) return (Py_ssize_t)j->starts[i + 1] - 1;
    return j->size - (j->data[j->size - 1] == '\n' ? 1 : 0);
}

/* Line i, ending at `end`, by what it starts with and by the lines before it: its kind and
   words, and (Python and Java presets) whether it continues the line before; a cause never
   raised marks the line two before it. Lines are judged in order. */
static void judge_line(Judged *j, Py_ssize_t i, Py_ssize_t end) {
    const unsigned char *data = j->data;
    Py_ssize_t s = (Py_ssize_t)j->starts[i];
    unsigned char first = data[s];
    /* By tables and stores, not branches: a log's lines start with a space or not in no order
       a processor can predict. */
    unsigned char k = kind_of_first[first];
    if (k == CARRIAGE_RETURN) k = end - s == 1 ? BLANK : 0;
    j->kind[i] = k;
    unsigned char g = 0;
    if (word_heads[first]) {
        int w = word_at(data, j->size, s);
        g = w < 0 ? 0 : (unsigned char)words[w].groups;
    }
    j->groups[i] = g;
    j->context_heads |= g & GROUP_CONTEXT_HEAD;
    if (!(j->flags & (PRESET_PYTHON | PRESET_JAVA))) return;
    j->continues[i] = (k | (g & (GROUP_PYTHON | GROUP_JAVA))) != 0; /* 0 until now */
    if (i >= 1 && (j->kind[i - 1] & INDENTED) && is_identifier_start[first]) {
        /* After a traceback's last frame: its exception's line. */
        Py_ssize_t head = j->last_plain;
        if (python_exception(data, s, end) &&
            (head < 0 || (j->groups[head] & GROUP_TRACEBACK_HEAD) ||
             contains(data, j->starts[head], j->starts[head + 1], TRACEBACK)))
            j->continues[i] = 1;
    }
    if (i >= 2 && (g & GROUP_CHAINED) && (j->kind[i - 1] & BLANK))
        j->continues[i - 2] = 1; /* a cause that was never raised */
    j->last_plain = (k & (INDENTED | BLANK)) ? j->last_plain : i;
}

/* judge_line for every line, each line's first bytes asked of memory a few lines ahead (the
   judging waits on them otherwise: a line's start is a load that the next test depends on). */
static void judge_lines(Judged *j) {
    for (Py_ssize_t i = 0; i < j->count; i++) {
        if (i + PREFETCH_LINES < j->count)
            __builtin_prefetch(j->data + j->starts[i + PREFETCH_LINES]);
        judge_line(j, i, line_end(j, i));
    }
}

/* Once every line is judged by judge_line: what the presets tell by the lines after a line
   (Spark's query contexts, a Java exception's line before its frames) and Go's lines. */
static void judge_rest(Judged *j) {
    const unsigned char *data = j->data;
    const int64_t *starts = j->starts;
    unsigned char *continues = j->continues, *kind = j->kind, *groups = j->groups;
    Py_ssize_t count = j->count, size = j->size;
    if ((j->flags & (PRESET_PYTHON | PRESET_JAVA)) && j->context_heads) {
        for (Py_ssize_t head = 0; head < count; head++) {
            if (!(groups[head] & GROUP_CONTEXT_HEAD)) continue;
            Py_ssize_t s = (Py_ssize_t)starts[head];
            Py_ssize_t n = (Py_ssize_t)strlen(DATAFRAME_CONTEXT);
            if (s + n <= size && memcmp(data + s, DATAFRAME_CONTEXT, (size_t)n) == 0) {
                Py_ssize_t called = head + 1;
                if (called < count && called_from(data, starts[called], line_end(j, called)))
                    for (Py_ssize_t line = head; line < head + 3 && line < count; line++)
                        kind[line] |= CONTEXT;
                continue;
            }
            if (!sql_context(data, s, line_end(j, head))) continue;
            kind[head] |= CONTEXT;
            Py_ssize_t line = head + 1;
            Py_ssize_t stop = head + 1 + 2 * CONTEXT_LINES;
            while (line < (count < stop ? count : stop)) {
                kind[line] |= CONTEXT; /* a query's line */
                Py_ssize_t under = line + 1;
                if (under >= count || !carets(data, starts[under], line_end(j, under))) break;
                kind[under] |= CONTEXT;
                line = under + 1;
            }
        }
        for (Py_ssize_t i = 0; i < count; i++)
            if (kind[i] & CONTEXT) continues[i] = 1;
    }
    if (j->flags & PRESET_JAVA) {
        /* The exception's line: before its frames, or before its message's query context. */
        for (Py_ssize_t i = 0; i + 1 < count; i++) {
            Py_ssize_t after = i + 1;
            int nested = (kind[after] & INDENTED) ||
                         ((kind[after] & CONTEXT) && !(kind[i] & CONTEXT));
            if (nested && !(kind[i] & INDENTED) &&
                java_exception(data, starts[i], line_end(j, i)))
                continues[i] = 1;
        }
    }
    if (j->flags & PRESET_GO) {
        for (Py_ssize_t i = 0; i < count; i++) {
            if ((kind[i] & (INDENTED | BLANK)) || (groups[i] & GROUP_GO)) continues[i] = 1;
            else if (go_function(data, starts[i], line_end(j, i))) continues[i] = 1;
        }
    }
}

static PyObject *preset_continuing(PyObject *self, PyObject *args) {
    Py_buffer view, starts_view;
    int flags;
    if (!PyArg_ParseTuple(args, "y*y*i", &view, &starts_view, &flags)) return NULL;
    PyObject *result = NULL;
    unsigned char *features = NULL;
    Py_ssize_t count = starts_view.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *starts = starts_view.buf;
    if (count && (starts[count - 1] >= view.len || starts[0] != 0)) {
        PyErr_SetString(PyExc_ValueError, "starts are not the lines of data");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, count);
    if (result == NULL) goto done;
    unsigned char *continues = (unsigned char *)PyByteArray_AS_STRING(result);
    memset(continues, 0, (size_t)count);
    if (!count) goto done;
    features = PyMem_Malloc((size_t)count * 2);
    if (features == NULL) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    Judged j = {view.buf, view.len, starts, continues, features, features + count,
                count, flags, -1, 0};
    Py_BEGIN_ALLOW_THREADS /* C alone from here: the sink's thread may run meanwhile */
    judge_lines(&j);
    judge_rest(&j);
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(features);
    PyBuffer_Release(&view);
    PyBuffer_Release(&starts_view);
    return result;
}

/* The events of count lines from their continuation marks (the first line begins one
   whatever its mark): those of more than one line into runs' columns (room for count / 2 + 1),
   the last event's first line, and the last first line at or before `settled` (0 if none is).
   Returns 1 (and stops) where an event passes max_lines or max_bytes. Needs no GIL. */
typedef struct {
    int64_t *firsts, *lines;
    Py_ssize_t listed, last_first, last_settled;
} Runs;

static int runs_of(const unsigned char *continues, const int64_t *starts, Py_ssize_t count,
                   Py_ssize_t size, Py_ssize_t max_lines, Py_ssize_t max_bytes,
                   Py_ssize_t settled, Runs *runs) {
    Py_ssize_t first = 0;
    for (Py_ssize_t line = 1; line <= count; line++) {
        if (line < count && continues[line]) continue;
        /* the event [first, line) */
        Py_ssize_t taken = line - first;
        Py_ssize_t end = line < count ? (Py_ssize_t)starts[line] : size;
        if (taken > max_lines || end - (Py_ssize_t)starts[first] > max_bytes) return 1;
        if (taken > 1) {
            runs->firsts[runs->listed] = first;
            runs->lines[runs->listed] = taken;
            runs->listed++;
        }
        if (first <= settled) runs->last_settled = first;
        if (line < count) first = line;
    }
    runs->last_first = count ? first : 0;
    return 0;
}

/* A read's events from its lines' continuation marks (the first line begins one whatever its
   mark): the events of more than one line as two int64 columns (first line, lines), the last
   event's first line, and the last first line at or before `settled` (0 if none is); None if an
   event passes max_lines or max_bytes (the caller cuts it). */
static PyObject *event_runs(PyObject *self, PyObject *args) {
    Py_buffer marks_view, starts_view;
    Py_ssize_t size, max_lines, max_bytes, settled;
    if (!PyArg_ParseTuple(args, "y*y*nnnn", &marks_view, &starts_view, &size, &max_lines,
                          &max_bytes, &settled))
        return NULL;
    PyObject *result = NULL, *firsts = NULL, *lines = NULL;
    const unsigned char *continues = marks_view.buf;
    const int64_t *starts = starts_view.buf;
    Py_ssize_t count = marks_view.len;
    if (starts_view.len != count * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "one mark a line");
        goto done;
    }
    Py_ssize_t room = (count / 2 + 1) * (Py_ssize_t)sizeof(int64_t);
    firsts = PyByteArray_FromStringAndSize(NULL, room);
    lines = PyByteArray_FromStringAndSize(NULL, room);
    if (firsts == NULL || lines == NULL) goto done;
    int64_t *first_out = (int64_t *)PyByteArray_AS_STRING(firsts);
    int64_t *lines_out = (int64_t *)PyByteArray_AS_STRING(lines);
    Runs runs = {first_out, lines_out, 0, 0, 0};
    int over;
    Py_BEGIN_ALLOW_THREADS
    over = runs_of(continues, starts, count, size, max_lines, max_bytes, settled, &runs);
    Py_END_ALLOW_THREADS
    Py_ssize_t listed = runs.listed, first = runs.last_first, last_settled = runs.last_settled;
    if (over) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (PyByteArray_Resize(firsts, listed * (Py_ssize_t)sizeof(int64_t)) < 0 ||
        PyByteArray_Resize(lines, listed * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto done;
    result = Py_BuildValue("OOnn", firsts, lines, first, last_settled);
done:
    Py_XDECREF(firsts);
    Py_XDECREF(lines);
    PyBuffer_Release(&marks_view);
    PyBuffer_Release(&starts_view);
    return result;
}

/* A read framed by the presets alone (frame_lines' work, needing no GIL): the lines' offsets,
   their marks and the events of more than one line, in memory of its own (free_framed). */
typedef struct {
    int64_t *starts, *firsts, *lines;
    unsigned char *continues;
    Py_ssize_t count;
    Runs runs;
    int over;   /* an event passes a bound: no events */
    int failed; /* out of memory */
} Framed;

static void free_framed(Framed *f) {
    free(f->starts);
    free(f->continues);
    free(f->firsts);
    free(f->lines);
    f->starts = f->firsts = f->lines = NULL;
    f->continues = NULL;
}

static void frame_read(const unsigned char *data, Py_ssize_t size, int flags,
                       Py_ssize_t max_lines, Py_ssize_t max_bytes, Py_ssize_t lookahead,
                       Framed *f) {
    /* Room for lines of 32 bytes on average (a log of tracebacks averages under 64: a second
       pass over its offsets otherwise); more is made as it fills. */
    Py_ssize_t capacity = size / 32 + 64, count = 0, from = 0;
    unsigned char *features = NULL;
    memset(f, 0, sizeof *f);
    int64_t *starts = f->starts = malloc((size_t)capacity * sizeof(int64_t));
    if (starts == NULL) {
        f->failed = 1;
        return;
    }
    if (size) {
        starts[0] = 0;
        count = 1;
        while (from < size) {
            count = fill_after_newlines(data, size, &from, starts, count, capacity);
            if (from < size) {
                int64_t *grown = realloc(starts, (size_t)capacity * 2 * sizeof(int64_t));
                if (grown == NULL) {
                    f->failed = 1;
                    return;
                }
                starts = f->starts = grown;
                capacity *= 2;
            }
        }
        if (data[size - 1] == '\n') count--; /* the last newline ends it */
    }
    f->count = count;
    if (!count) return;
    f->continues = calloc((size_t)count, 1);
    features = malloc((size_t)count * 2);
    f->firsts = malloc((size_t)(count / 2 + 1) * sizeof(int64_t));
    f->lines = malloc((size_t)(count / 2 + 1) * sizeof(int64_t));
    if (f->continues == NULL || features == NULL || f->firsts == NULL || f->lines == NULL) {
        f->failed = 1;
    } else {
        Judged j = {data, size, starts, f->continues, features, features + count,
                    count, flags, -1, 0};
        judge_lines(&j);
        judge_rest(&j);
        f->runs.firsts = f->firsts;
        f->runs.lines = f->lines;
        f->over = runs_of(f->continues, starts, count, size, max_lines, max_bytes,
                          count - 1 - lookahead, &f->runs);
    }
    free(features);
}

/* frame_lines' answer from a framed read: (starts, marks, runs | None). */
static PyObject *framed_result(const Framed *f) {
    if (f->failed) return PyErr_NoMemory();
    Py_ssize_t count = f->count;
    if (f->over || !count)
        return Py_BuildValue("(NNO)",
                             PyByteArray_FromStringAndSize((char *)f->starts, count * 8),
                             PyByteArray_FromStringAndSize((char *)f->continues, count),
                             Py_None);
    return Py_BuildValue("(NN(NNnn))", PyByteArray_FromStringAndSize((char *)f->starts, count * 8),
                         PyByteArray_FromStringAndSize((char *)f->continues, count),
                         PyBytes_FromStringAndSize((char *)f->firsts, f->runs.listed * 8),
                         PyBytes_FromStringAndSize((char *)f->lines, f->runs.listed * 8),
                         f->runs.last_first, f->runs.last_settled);
}

/* A read framed by the presets alone, in one call and one release of the GIL (each release
   lets the sink's thread take it, and getting it back costs a wake-up): what line_starts,
   preset_continuing and event_runs give, the last with settled = lines - 1 - lookahead and
   None where an event passes a bound. */
static PyObject *frame_lines(PyObject *self, PyObject *args) {
    Py_buffer view;
    int flags;
    Py_ssize_t max_lines, max_bytes, lookahead;
    if (!PyArg_ParseTuple(args, "y*innn", &view, &flags, &max_lines, &max_bytes, &lookahead))
        return NULL;
    Framed framed;
    Py_BEGIN_ALLOW_THREADS
    frame_read(view.buf, view.len, flags, max_lines, max_bytes, lookahead, &framed);
    Py_END_ALLOW_THREADS
    PyObject *result = framed_result(&framed);
    free_framed(&framed);
    PyBuffer_Release(&view);
    return result;
}

/* read_judged(fd, offset, size, flags, max_lines, max_bytes, lookahead)
   -> (data, judged, one_line | None, framed | None): frame_lines' answer for a read it makes
   itself, in the same release of the GIL: size bytes (at most) of fd at offset, into a
   bytearray not zeroed first; `judged` of them (up to the last newline; 0: no newline) judged
   as one_line_events does and, where that does not settle them (or a line is over max_bytes),
   as frame_lines does. A read then framed took the GIL back in between, and the sink's thread
   holds it then: waiting for it cost as much as the framing (case 14). OSError if the read
   fails. */
static PyObject *read_judged(PyObject *self, PyObject *args) {
    int fd, flags;
    Py_ssize_t offset, size, max_lines, max_bytes, lookahead;
    if (!PyArg_ParseTuple(args, "inninnn", &fd, &offset, &size, &flags, &max_lines, &max_bytes,
                          &lookahead))
        return NULL;
    if (size < 0) size = 0;
    PyObject *buffer = PyByteArray_FromStringAndSize(NULL, size);
    if (buffer == NULL) return NULL;
    unsigned char *data = (unsigned char *)PyByteArray_AS_STRING(buffer);
    Py_ssize_t got = 0, judged = 0, lines = 0, longest = 0;
    int error = 0, one_line = 0, framed_done = 0;
    Framed framed;
    memset(&framed, 0, sizeof framed);
    Py_BEGIN_ALLOW_THREADS
    while (got < size) {
        ssize_t n = pread(fd, data + got, (size_t)(size - got), (off_t)(offset + got));
        if (n < 0) {
            if (errno == EINTR) continue;
            error = errno;
            break;
        }
        if (n == 0) break;
        got += n;
    }
    const unsigned char *newline = error || !got ? NULL : memrchr(data, '\n', (size_t)got);
    if (newline != NULL) {
        judged = newline - data + 1;
        if (!(flags & PRESET_GO)) one_line = one_lines_of(data, judged, &lines, &longest);
        if (!one_line || longest > max_bytes) {
            frame_read(data, judged, flags, max_lines, max_bytes, lookahead, &framed);
            framed_done = 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *one = NULL, *frames = NULL;
    if (error) {
        errno = error;
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    if (PyByteArray_Resize(buffer, got) < 0) goto done;
    one = one_line ? Py_BuildValue("nn", lines, longest) : Py_NewRef(Py_None);
    frames = framed_done ? framed_result(&framed) : Py_NewRef(Py_None);
    if (one == NULL || frames == NULL) goto done;
    result = Py_BuildValue("(OnOO)", buffer, judged, one, frames);
done:
    Py_XDECREF(one);
    Py_XDECREF(frames);
    Py_DECREF(buffer);
    free_framed(&framed);
    return result;
}

static PyObject *set_words(PyObject *self, PyObject *args) {
    PyObject *table;
    if (!PyArg_ParseTuple(args, "O", &table)) return NULL;
    PyObject *items = PySequence_Fast(table, "words must be a sequence of (bytes, groups)");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    if (n > MAX_WORDS) {
        Py_DECREF(items);
        return PyErr_Format(PyExc_ValueError, "at most %d words", MAX_WORDS);
    }
    Word loaded[MAX_WORDS];
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *bytes;
        Py_ssize_t length;
        int groups;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "y#i", &bytes, &length,
                              &groups)) {
            Py_DECREF(items);
            return NULL;
        }
        if (length < 1 || length > WORD_PREFIX) {
            Py_DECREF(items);
            return PyErr_Format(PyExc_ValueError, "a word is 1 to %d bytes", WORD_PREFIX);
        }
        memcpy(loaded[i].bytes, bytes, (size_t)length);
        loaded[i].length = length;
        loaded[i].groups = groups;
    }
    Py_DECREF(items);
    memcpy(words, loaded, sizeof(Word) * (size_t)n);
    word_count = (int)n;
    memset(word_heads, 0, sizeof word_heads);
    for (int w = 0; w < word_count; w++) word_heads[(unsigned char)words[w].bytes[0]] = 1;
    Py_RETURN_NONE;
}

/* The newlines in [data, data + size): sixteen bytes a step where SSE2 is, each step's
   matches added up bytewise and summed every 255 steps (before a byte could overflow). */
static Py_ssize_t newlines_in(const unsigned char *data, Py_ssize_t size) {
    Py_ssize_t count = 0, i = 0;
#if defined(__SSE2__)
    const __m128i newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= size) {
        __m128i sums = zero;
        for (int step = 0; step < 255 && i + 16 <= size; step++, i += 16)
            sums = _mm_sub_epi8(
                sums, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(data + i)), newline));
        __m128i halves = _mm_sad_epu8(sums, zero);
        count += _mm_cvtsi128_si32(halves) + _mm_cvtsi128_si32(_mm_srli_si128(halves, 8));
    }
#endif
    for (; i < size; i++) count += data[i] == '\n';
    return count;
}

/* count_newlines(data) -> int; the GIL is let go over a large buffer. */
static PyObject *count_newlines(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Py_ssize_t count;
    if (view.len >= 64 * 1024) {
        Py_BEGIN_ALLOW_THREADS
        count = newlines_in(view.buf, view.len);
        Py_END_ALLOW_THREADS
    } else {
        count = newlines_in(view.buf, view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(count);
}

static PyMethodDef methods[] = {
    {"count_newlines", count_newlines, METH_VARARGS,
     "count_newlines(data) -> int: the newline bytes in data."},
    {"line_starts", line_starts, METH_VARARGS,
     "line_starts(data) -> bytearray: every line's first offset as native int64."},
    {"preset_continuing", preset_continuing, METH_VARARGS,
     "preset_continuing(data, starts, flags) -> bytearray: per line, 1 if a preset says it "
     "continues the line before."},
    {"one_line_events", one_line_events, METH_VARARGS,
     "one_line_events(data) -> (lines, longest) | None: where no line may continue the one "
     "before by the Python or Java preset, its lines and its longest line's bytes."},
    {"event_runs", event_runs, METH_VARARGS,
     "event_runs(marks, starts, size, max_lines, max_bytes, settled) -> (firsts, lines, "
     "last_first, last_settled_first) | None: a read's events of several lines."},
    {"frame_lines", frame_lines, METH_VARARGS,
     "frame_lines(data, flags, max_lines, max_bytes, lookahead) -> (starts, marks, runs | "
     "None): line_starts, preset_continuing and event_runs in one call."},
    {"read_judged", read_judged, METH_VARARGS,
     "read_judged(fd, offset, size, flags, max_lines, max_bytes, lookahead) -> (data, judged, "
     "one_line | None, framed | None): a read and frame_lines' answer for its whole lines, in "
     "one release of the GIL."},
    {"newline_finder", newline_finder, METH_VARARGS,
     "newline_finder(name=None) -> (name in use, names available)"},
    {"set_words", set_words, METH_VARARGS,
     "set_words([(prefix, groups), ...]): the presets' words, each its first 16 bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_framing",
    "The multiline presets' tests of a read's lines, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__framing(void) {
    init_tables();
    init_kinds();
    choose_fill();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "PYTHON", PRESET_PYTHON) < 0 ||
        PyModule_AddIntConstant(m, "JAVA", PRESET_JAVA) < 0 ||
        PyModule_AddIntConstant(m, "GO", PRESET_GO) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_PYTHON", GROUP_PYTHON) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_JAVA", GROUP_JAVA) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_TRACEBACK_HEAD", GROUP_TRACEBACK_HEAD) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_CHAINED", GROUP_CHAINED) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_CONTEXT_HEAD", GROUP_CONTEXT_HEAD) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_GO", GROUP_GO) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

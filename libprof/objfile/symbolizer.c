#include "symbolizer.h"
#include "debugfile.h"
#include "lines.h"
#include "name_cache.h"
#include "symbols.h"
#include "sysroot.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct symbolizer {
    struct elf_symbols *symbols;
    bool symbols_tried;        /* symbols too: names remembered need neither */
    char symbols_path[PATH_MAX];
    char debug_symbols_path[PATH_MAX];   /* "": none; else tried first */
    struct elf_lines *lines;
    bool lines_tried;          /* lines are read at the first lookup */
    char lines_path[PATH_MAX];
    char sources[PATH_MAX + 256];
    struct name_cache *remembered;   /* NULL: names are not remembered */
};

/* Where names are remembered across runs ("": nowhere, the default: the
 * runtime's helper names inside the target and must write nothing). */
static char cache_dir[PATH_MAX];

void symbolizer_remember_in(const char *dir)
{
    snprintf(cache_dir, sizeof cache_dir, "%s", dir ? dir : "");
}

/* The debug file's symbols when it has any, else the file's own. */
static struct elf_symbols *symbols_of(struct symbolizer *s)
{
    if (!s->symbols_tried) {
        char why[256];
        s->symbols_tried = true;
        if (*s->debug_symbols_path) {
            s->symbols = elf_symbols_read(s->debug_symbols_path, why, sizeof why);
            if (!elf_symbols_count(s->symbols)) {
                elf_symbols_free(s->symbols);
                s->symbols = NULL;
            }
        }
        if (!s->symbols)
            s->symbols = elf_symbols_read(s->symbols_path, why, sizeof why);
    }
    return s->symbols;
}

/* The lines, at the first lookup (of `addrs`, the first asked for). The
 * symbol table, when it is still to be read, is read after the DWARF's code
 * ranges are indexed and the lookups planned: its sections are inflated on a
 * second thread meanwhile (libc's debug .symtab is 5 ms of a first run, its
 * .debug_info 11 whole). */
static struct elf_lines *lines_of(struct symbolizer *s, const uint64_t *addrs, size_t n)
{
    if (!s->lines_tried) {
        char why[256];
        s->lines_tried = true;
        struct elf_lines *opened = elf_lines_open(s->lines_path, why, sizeof why);
        s->lines = opened ? elf_lines_index(opened, s->lines_path, why, sizeof why) : NULL;
        if (s->lines)
            elf_lines_plan(s->lines, addrs, n);
        symbols_of(s);
    }
    return s->lines;
}

struct symbolizer *symbolizer_open(const char *reported, char *err, size_t errlen)
{
    char in_sysroot[PATH_MAX];
    const char *path = sysroot_path(reported, in_sysroot, sizeof in_sysroot);
    struct symbolizer *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* Which table the symbols come from, without reading them: libc's and its
     * debug file's took 5.7 ms of each run whose names were all remembered. */
    const char *table = elf_symbols_table_of(path, err, errlen);
    if (!table) {
        free(s);
        return NULL;
    }
    char debug[PATH_MAX];
    struct debugfile_search search;
    bool own_lines = elf_has_section(path, ".debug_line");
    bool need_debug = !own_lines || strcmp(table, ".symtab") != 0;
    bool have_debug = need_debug && debugfile_find(path, debug, sizeof debug, &search);

    snprintf(s->symbols_path, sizeof s->symbols_path, "%s", path);
    if (have_debug && strcmp(table, ".symtab") != 0)
        snprintf(s->debug_symbols_path, sizeof s->debug_symbols_path, "%s", debug);
    snprintf(s->lines_path, sizeof s->lines_path, "%s", own_lines || !have_debug ? path : debug);

    if (own_lines)
        snprintf(s->sources, sizeof s->sources, "symbols and lines from %s", path);
    else if (have_debug)
        snprintf(s->sources, sizeof s->sources, "symbols and lines from %s (%s)", debug,
                 search.has_build_id && strstr(debug, "/.build-id/") ? "build-id" : ".gnu_debuglink");
    else if (need_debug && search.crc_mismatch)
        snprintf(s->sources, sizeof s->sources,
                 "no lines: the debug file named by .gnu_debuglink (%s) has another CRC; symbols from %s",
                 search.debuglink, table);
    else
        snprintf(s->sources, sizeof s->sources,
                 "no lines: %s has no DWARF and no debug file was found%s%s%s; symbols from %s",
                 path, search.has_debuglink ? " (.gnu_debuglink: " : "",
                 search.has_debuglink ? search.debuglink : "", search.has_debuglink ? ")" : "",
                 *table ? table : "nowhere");
    /* The build-id the debug file was looked for by, else read now. */
    char build_id[sizeof search.build_id] = "";
    uint64_t extent;
    if (need_debug && search.has_build_id)
        snprintf(build_id, sizeof build_id, "%s", search.build_id);
    else if (*cache_dir && !elf_file_extent(path, build_id, sizeof build_id, &extent))
        build_id[0] = '\0';
    if (*cache_dir && *build_id)
        s->remembered = name_cache_open(cache_dir, build_id, s->sources);
    return s;
}

void symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct symbol_info *out)
{
    *out = (struct symbol_info){ 0 };
    out->function = elf_symbols_lookup(symbols_of(s), addr, &out->offset);
    if (lines_of(s, &addr, 1))
        out->file = elf_lines_lookup(s->lines, addr, &out->line);
}

static size_t frames_read(struct symbolizer *s, uint64_t addr, struct symbol_info *frames, size_t max);

void symbolizer_expect(struct symbolizer *s, const uint64_t *addrs, size_t n)
{
    uint64_t *wanted = s->lines_tried || !n ? NULL : malloc(n * sizeof *wanted);
    if (!wanted)
        return;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        struct symbol_info frames[SYMBOLIZER_MAX_INLINED];
        if (!s->remembered || !name_cache_get(s->remembered, addrs[i], frames, SYMBOLIZER_MAX_INLINED))
            wanted[count++] = addrs[i];
    }
    if (count)
        lines_of(s, wanted, count);
    free(wanted);
}

size_t symbolizer_frames(struct symbolizer *s, uint64_t addr, struct symbol_info *frames, size_t max)
{
    size_t n = s->remembered && max ? name_cache_get(s->remembered, addr, frames, max) : 0;
    if (n)
        return n;
    n = frames_read(s, addr, frames, max);
    if (s->remembered && max >= SYMBOLIZER_MAX_INLINED)   /* a whole answer only */
        name_cache_put(s->remembered, addr, frames, n);
    return n;
}

/* The frames from the symbol table and DWARF. */
static size_t frames_read(struct symbolizer *s, uint64_t addr, struct symbol_info *frames, size_t max)
{
    struct elf_line_frame lines[SYMBOLIZER_MAX_INLINED];
    size_t n = max && lines_of(s, &addr, 1) ? elf_lines_frames(s->lines, addr, lines, max < SYMBOLIZER_MAX_INLINED ? max : SYMBOLIZER_MAX_INLINED) : 0;
    if (!max)
        return 0;
    uint64_t offset = 0;
    const char *symbol = elf_symbols_lookup(symbols_of(s), addr, &offset);
    if (!n) {
        frames[0] = (struct symbol_info){ symbol, offset, NULL, 0 };
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        frames[i] = (struct symbol_info){ lines[i].function, 0, lines[i].file, lines[i].line };
    /* The holding function: as the symbol table names it (a clone's suffix,
     * the exported alias), with the offset; DWARF's name when it has none. */
    if (symbol) {
        frames[n - 1].function = symbol;
        frames[n - 1].offset = offset;
    }
    return n;
}

const char *symbolizer_sources(const struct symbolizer *s)
{
    return s->sources;
}

const struct elf_symbols *symbolizer_symbols(struct symbolizer *s)
{
    return symbols_of(s);
}

void symbolizer_close(struct symbolizer *s)
{
    if (!s)
        return;
    name_cache_close(s->remembered);
    elf_symbols_free(s->symbols);
    elf_lines_free(s->lines);
    free(s);
}

#include "lines.h"
#include <errno.h>
#include <fcntl.h>
#include <libdwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct row { uint64_t addr; uint32_t file; uint32_t line; bool end; };

struct elf_lines {
    struct row *rows;
    size_t count, cap;
    char **files;
    size_t file_count, file_cap;
};

static int by_address(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (int)y->end - (int)x->end;   /* an end at A before a start at A */
}

/* Index of `name` among the files seen (consecutive rows mostly share one). */
static long file_index(struct elf_lines *l, const char *name)
{
    for (size_t i = l->file_count; i-- > 0 && l->file_count - i <= 64;)
        if (strcmp(l->files[i], name) == 0)
            return (long)i;
    if (l->file_count == l->file_cap) {
        size_t cap = l->file_cap ? l->file_cap * 2 : 64;
        char **f = realloc(l->files, cap * sizeof *f);
        if (!f)
            return -1;
        l->files = f;
        l->file_cap = cap;
    }
    if (!(l->files[l->file_count] = strdup(name)))
        return -1;
    return (long)l->file_count++;
}

static bool add_row(struct elf_lines *l, struct row r)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        struct row *rows = realloc(l->rows, cap * sizeof *rows);
        if (!rows)
            return false;
        l->rows = rows;
        l->cap = cap;
    }
    l->rows[l->count++] = r;
    return true;
}

static bool read_cu_lines(Dwarf_Debug dbg, Dwarf_Die cu, struct elf_lines *l)
{
    Dwarf_Unsigned version;
    Dwarf_Small tables;
    Dwarf_Line_Context ctx;
    Dwarf_Error error = NULL;
    if (dwarf_srclines_b(cu, &version, &tables, &ctx, &error) != DW_DLV_OK)
        return true;   /* a CU without a line table */
    Dwarf_Line *lines;
    Dwarf_Signed n;
    bool ok = true;
    if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &error) == DW_DLV_OK) {
        for (Dwarf_Signed i = 0; ok && i < n; i++) {
            Dwarf_Addr addr;
            Dwarf_Unsigned lineno;
            Dwarf_Bool end = 0;
            char *src = NULL;
            if (dwarf_lineaddr(lines[i], &addr, &error) != DW_DLV_OK ||
                dwarf_lineno(lines[i], &lineno, &error) != DW_DLV_OK)
                continue;
            dwarf_lineendsequence(lines[i], &end, &error);
            long file = 0;
            if (!end) {
                if (dwarf_linesrc(lines[i], &src, &error) != DW_DLV_OK)
                    continue;
                file = file_index(l, src);
                dwarf_dealloc(dbg, src, DW_DLA_STRING);
                if (file < 0) {
                    ok = false;
                    break;
                }
            }
            ok = add_row(l, (struct row){ addr, (uint32_t)file, (uint32_t)lineno, end != 0 });
        }
    }
    dwarf_srclines_dealloc_b(ctx);
    return ok;
}

struct elf_lines *elf_lines_read(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    Dwarf_Debug dbg;
    Dwarf_Error error = NULL;
    int rc = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &dbg, &error);
    if (rc != DW_DLV_OK) {
        snprintf(err, errlen, "%s has no DWARF debug information", path);
        if (rc == DW_DLV_ERROR)
            dwarf_dealloc(NULL, error, DW_DLA_ERROR);
        close(fd);
        return NULL;
    }
    struct elf_lines *l = calloc(1, sizeof *l);
    bool ok = l != NULL;
    for (;;) {
        Dwarf_Unsigned length, type_offset, next;
        Dwarf_Half version, address_size, offset_size, extension_size, cu_type;
        Dwarf_Off abbrev;
        Dwarf_Sig8 signature;
        if (!ok || dwarf_next_cu_header_d(dbg, 1, &length, &version, &abbrev, &address_size,
                                          &offset_size, &extension_size, &signature, &type_offset,
                                          &next, &cu_type, &error) != DW_DLV_OK)
            break;
        Dwarf_Die cu;
        if (dwarf_siblingof_b(dbg, NULL, 1, &cu, &error) != DW_DLV_OK)
            continue;
        ok = read_cu_lines(dbg, cu, l);
        dwarf_dealloc(dbg, cu, DW_DLA_DIE);
    }
    dwarf_finish(dbg, &error);
    close(fd);
    if (!ok || !l->count) {
        snprintf(err, errlen, ok ? "%s has no DWARF line table" : "out of memory reading %s", path);
        elf_lines_free(l);
        return NULL;
    }
    qsort(l->rows, l->count, sizeof *l->rows, by_address);
    return l;
}

const char *elf_lines_lookup(const struct elf_lines *l, uint64_t addr, unsigned *line)
{
    size_t lo = 0, hi = l->count;
    while (lo < hi) {   /* first row above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (l->rows[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || l->rows[lo - 1].end)
        return NULL;
    const struct row *r = &l->rows[lo - 1];
    *line = r->line;
    return l->files[r->file];
}

void elf_lines_free(struct elf_lines *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->file_count; i++)
        free(l->files[i]);
    free(l->files);
    free(l->rows);
    free(l);
}

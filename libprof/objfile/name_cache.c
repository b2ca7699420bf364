#include "name_cache.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The file: MAGIC, the CRC-32 of all that follows it, the sources line,
 * the count of addresses, then each address with its frames. Little-endian
 * integers; a string is a u16 length (NO_STRING: none) and its bytes and a
 * NUL, so that names point into the file's bytes as they were read. */
static const char MAGIC[8] = "MPNAMES1";
#define NO_STRING 0xFFFFu
#define MAX_ENTRIES (1u << 18)      /* addresses remembered per object */
#define MAX_FILE_BYTES (16u << 20)

struct entry {
    uint64_t addr;
    uint32_t first;   /* in frames */
    uint32_t count;
};

struct name_cache {
    char path[PATH_MAX];
    char *sources;
    char **loaded;                /* the files' bytes names point into */
    size_t loaded_count, loaded_cap;
    struct entry *entries;
    size_t count, cap;
    struct symbol_info *frames;
    size_t frame_count, frame_cap;
    char **owned;                 /* strings copied by name_cache_put */
    size_t owned_count, owned_cap;
    uint32_t *index;              /* open addressing: entry + 1 */
    size_t index_cap;
    bool dirty;
};

static bool grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*items, n * size);
    if (!p)
        return false;
    *items = p;
    *cap = n;
    return true;
}

static size_t slot_of(uint64_t addr, size_t cap)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct entry *find(const struct name_cache *c, uint64_t addr)
{
    if (!c->index_cap)
        return NULL;
    for (size_t i = slot_of(addr, c->index_cap); c->index[i]; i = (i + 1) & (c->index_cap - 1))
        if (c->entries[c->index[i] - 1].addr == addr)
            return &c->entries[c->index[i] - 1];
    return NULL;
}

static bool index_entries(struct name_cache *c)
{
    size_t cap = 256;
    while (cap < c->count * 2)
        cap *= 2;
    if (cap != c->index_cap) {
        uint32_t *index = calloc(cap, sizeof *index);
        if (!index)
            return false;
        free(c->index);
        c->index = index;
        c->index_cap = cap;
    } else {
        memset(c->index, 0, cap * sizeof *c->index);
    }
    for (size_t e = 0; e < c->count; e++) {
        size_t i = slot_of(c->entries[e].addr, cap);
        while (c->index[i])
            i = (i + 1) & (cap - 1);
        c->index[i] = (uint32_t)(e + 1);
    }
    return true;
}

/* One address's frames added (not when it is there already). */
static bool add(struct name_cache *c, uint64_t addr, const struct symbol_info *frames, size_t n)
{
    if (find(c, addr) || c->count >= MAX_ENTRIES)
        return true;
    if (!grow((void **)&c->entries, &c->cap, c->count + 1, sizeof *c->entries) ||
        !grow((void **)&c->frames, &c->frame_cap, c->frame_count + n, sizeof *c->frames))
        return false;
    c->entries[c->count++] = (struct entry){ addr, (uint32_t)c->frame_count, (uint32_t)n };
    memcpy(c->frames + c->frame_count, frames, n * sizeof *frames);
    c->frame_count += n;
    if (c->count * 2 > c->index_cap)
        return index_entries(c);
    size_t i = slot_of(addr, c->index_cap);
    while (c->index[i])
        i = (i + 1) & (c->index_cap - 1);
    c->index[i] = (uint32_t)c->count;
    return true;
}

/* --- reading ------------------------------------------------------------ */

struct reader {
    char *at, *end;
    bool ok;
};

static uint64_t take(struct reader *r, size_t bytes)
{
    uint64_t v = 0;
    if (!r->ok || (size_t)(r->end - r->at) < bytes) {
        r->ok = false;
        return 0;
    }
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)(unsigned char)r->at[i] << (8 * i);
    r->at += bytes;
    return v;
}

static const char *take_string(struct reader *r)
{
    size_t len = (size_t)take(r, 2);
    if (len == NO_STRING || !r->ok)
        return NULL;
    if ((size_t)(r->end - r->at) < len + 1 || r->at[len] != '\0' || memchr(r->at, '\0', len)) {
        r->ok = false;
        return NULL;
    }
    const char *s = r->at;
    r->at += len + 1;
    return s;
}

/* The file's contents, whole, into *bytes (NULL when there is none, or it
 * is not a plain file of ours of a sane size). */
static size_t read_file(const char *path, char **bytes)
{
    *bytes = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return 0;
    size_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
        (size_t)st.st_size <= MAX_FILE_BYTES && (*bytes = malloc((size_t)st.st_size))) {
        for (ssize_t n; got < (size_t)st.st_size && (n = read(fd, *bytes + got, (size_t)st.st_size - got)) > 0;)
            got += (size_t)n;
        if (got != (size_t)st.st_size) {
            free(*bytes);
            *bytes = NULL;
            got = 0;
        }
    }
    close(fd);
    return got;
}

/* The file's entries added, when it is whole and of the same sources. */
static void load(struct name_cache *c)
{
    char *bytes;
    size_t size = read_file(c->path, &bytes);
    if (!bytes)
        return;
    struct reader r = { bytes, bytes + size, size >= sizeof MAGIC + 4 && memcmp(bytes, MAGIC, sizeof MAGIC) == 0 };
    r.at += r.ok ? sizeof MAGIC : 0;
    uint32_t crc = (uint32_t)take(&r, 4);
    if (!r.ok || crc != (uint32_t)crc32(0, (const unsigned char *)r.at, (uInt)(r.end - r.at))) {
        free(bytes);
        return;
    }
    size_t sources_len = (size_t)take(&r, 4);
    if (!r.ok || (size_t)(r.end - r.at) < sources_len + 1 || strlen(c->sources) != sources_len ||
        memcmp(r.at, c->sources, sources_len) != 0) {
        free(bytes);   /* named from elsewhere then: stale */
        return;
    }
    r.at += sources_len + 1;
    size_t count = (size_t)take(&r, 4);
    size_t entries_before = c->count, frames_before = c->frame_count;
    for (size_t e = 0; r.ok && e < count; e++) {
        uint64_t addr = take(&r, 8);
        size_t n = (size_t)take(&r, 1);
        struct symbol_info frames[SYMBOLIZER_MAX_INLINED + 1];
        for (size_t i = 0; r.ok && i < n; i++) {
            if (i >= sizeof frames / sizeof *frames) {
                r.ok = false;
                break;
            }
            frames[i].offset = take(&r, 8);
            frames[i].line = (unsigned)take(&r, 4);
            frames[i].function = take_string(&r);
            frames[i].file = take_string(&r);
        }
        if (r.ok && n && !add(c, addr, frames, n))
            r.ok = false;
    }
    if (!r.ok || r.at != r.end || !grow((void **)&c->loaded, &c->loaded_cap, c->loaded_count + 1, sizeof *c->loaded)) {
        c->count = entries_before;   /* damaged: none of it believed */
        c->frame_count = frames_before;
        index_entries(c);
        free(bytes);
        return;
    }
    c->loaded[c->loaded_count++] = bytes;
}

struct name_cache *name_cache_open(const char *dir, const char *build_id, const char *sources)
{
    struct name_cache *c = calloc(1, sizeof *c);
    if (!c || !(c->sources = strdup(sources)) ||
        (size_t)snprintf(c->path, sizeof c->path, "%s/%s", dir, build_id) >= sizeof c->path) {
        if (c)
            free(c->sources);
        free(c);
        return NULL;
    }
    load(c);
    if (c->count)
        utimensat(AT_FDCWD, c->path, NULL, AT_SYMLINK_NOFOLLOW);   /* used now: the last to go */
    return c;
}

size_t name_cache_get(struct name_cache *c, uint64_t addr, struct symbol_info *frames, size_t max)
{
    const struct entry *e = find(c, addr);
    size_t n = e ? (e->count < max ? e->count : max) : 0;
    if (n)
        memcpy(frames, c->frames + e->first, n * sizeof *frames);
    return n;
}

static const char *own(struct name_cache *c, const char *s, bool *ok)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && (!copy || !grow((void **)&c->owned, &c->owned_cap, c->owned_count + 1, sizeof *c->owned))) {
        free(copy);
        *ok = false;
        return NULL;
    }
    if (copy)
        c->owned[c->owned_count++] = copy;
    return copy;
}

void name_cache_put(struct name_cache *c, uint64_t addr, const struct symbol_info *frames, size_t n)
{
    if (!n || n > SYMBOLIZER_MAX_INLINED + 1 || find(c, addr))
        return;
    struct symbol_info copies[SYMBOLIZER_MAX_INLINED + 1];
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        size_t f = frames[i].function ? strlen(frames[i].function) : 0, l = frames[i].file ? strlen(frames[i].file) : 0;
        if (f >= NO_STRING || l >= NO_STRING)
            return;
        copies[i] = (struct symbol_info){ own(c, frames[i].function, &ok), frames[i].offset, own(c, frames[i].file, &ok),
                                          frames[i].line };
    }
    if (ok && add(c, addr, copies, n))
        c->dirty = true;
}

/* --- writing ------------------------------------------------------------ */

static void put_int(FILE *f, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        fputc((int)(v >> (8 * i) & 0xff), f);
}

static void put_string(FILE *f, const char *s)
{
    if (!s) {
        put_int(f, NO_STRING, 2);
        return;
    }
    size_t n = strlen(s);
    put_int(f, n, 2);
    fwrite(s, 1, n + 1, f);
}

/* Everything after the CRC, into memory. */
static char *serialize(const struct name_cache *c, size_t *size)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, size);
    if (!f)
        return NULL;
    put_int(f, strlen(c->sources), 4);
    fwrite(c->sources, 1, strlen(c->sources) + 1, f);
    put_int(f, c->count, 4);
    for (size_t e = 0; e < c->count; e++) {
        const struct entry *en = &c->entries[e];
        put_int(f, en->addr, 8);
        put_int(f, en->count, 1);
        for (size_t i = 0; i < en->count; i++) {
            const struct symbol_info *fr = &c->frames[en->first + i];
            put_int(f, fr->offset, 8);
            put_int(f, fr->line, 4);
            put_string(f, fr->function);
            put_string(f, fr->file);
        }
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The directory a cache file is in, into `dir` (false: none). */
static bool directory_of(const char *path, char *dir, size_t size)
{
    char *slash;
    if ((size_t)snprintf(dir, size, "%s", path) >= size || !(slash = strrchr(dir, '/')) || slash == dir)
        return false;
    *slash = '\0';
    return true;
}

/* The cache's directory made where missing (each part 0700) when there is
 * something to write, and written only when it is this user's own. */
static bool own_directory(const char *path)
{
    char dir[PATH_MAX];
    if (!directory_of(path, dir, sizeof dir))
        return false;
    for (char *slash = strchr(dir + 1, '/');; slash = strchr(slash + 1, '/')) {
        if (slash)
            *slash = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return false;
        if (!slash)
            break;
        *slash = '/';
    }
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

/* The directory under NAME_CACHE_MAX_BYTES: the files used longest ago
 * removed (memprof's own names only: a build-id's hex digits). */
static void trim(const char *path)
{
    char dir[PATH_MAX];
    if (!directory_of(path, dir, sizeof dir))
        return;
    for (int round = 0; round < 64; round++) {
        DIR *d = opendir(dir);
        if (!d)
            return;
        uint64_t total = 0;
        char oldest[NAME_MAX + 1] = "";
        struct timespec oldest_time = { 0 };
        for (struct dirent *e; (e = readdir(d));) {
            struct stat st;
            if (strspn(e->d_name, "0123456789abcdef") != strlen(e->d_name) || !*e->d_name ||
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
                continue;
            total += (uint64_t)st.st_size;
            if (!*oldest || st.st_mtim.tv_sec < oldest_time.tv_sec ||
                (st.st_mtim.tv_sec == oldest_time.tv_sec && st.st_mtim.tv_nsec < oldest_time.tv_nsec)) {
                snprintf(oldest, sizeof oldest, "%s", e->d_name);
                oldest_time = st.st_mtim;
            }
        }
        if (total <= NAME_CACHE_MAX_BYTES || !*oldest) {
            closedir(d);
            return;
        }
        unlinkat(dirfd(d), oldest, 0);
        closedir(d);
    }
}

static void write_back(struct name_cache *c)
{
    if (!own_directory(c->path))
        return;
    load(c);   /* what another process wrote since: kept too */
    size_t size;
    char *body = serialize(c, &size);
    if (!body)
        return;
    /* A temporary file beside it (mkstemp: 0600, O_EXCL), renamed over it:
     * a reader sees the old file or the new one whole. Not synced: a cache
     * lost in a crash is read anew. */
    char temp[PATH_MAX + 16];
    int fd = size + sizeof MAGIC + 4 <= MAX_FILE_BYTES &&
                     (size_t)snprintf(temp, sizeof temp, "%s.XXXXXX", c->path) < sizeof temp
                 ? mkstemp(temp)
                 : -1;
    if (fd >= 0) {
        unsigned char head[sizeof MAGIC + 4];
        memcpy(head, MAGIC, sizeof MAGIC);
        uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)body, (uInt)size);
        for (size_t i = 0; i < 4; i++)
            head[sizeof MAGIC + i] = (unsigned char)(crc >> (8 * i));
        bool ok = write(fd, head, sizeof head) == (ssize_t)sizeof head;
        for (size_t done = 0; ok && done < size;) {
            ssize_t n = write(fd, body + done, size - done);
            ok = n > 0;
            done += ok ? (size_t)n : 0;
        }
        ok = close(fd) == 0 && ok && rename(temp, c->path) == 0;
        if (!ok)
            unlink(temp);
        trim(c->path);
    }
    free(body);
}

void name_cache_close(struct name_cache *c)
{
    if (!c)
        return;
    if (c->dirty)
        write_back(c);
    for (size_t i = 0; i < c->loaded_count; i++)
        free(c->loaded[i]);
    for (size_t i = 0; i < c->owned_count; i++)
        free(c->owned[i]);
    free(c->loaded);
    free(c->owned);
    free(c->entries);
    free(c->frames);
    free(c->index);
    free(c->sources);
    free(c);
}

/* profile.proto, written and read (pprof.h).
 *
 * Protocol buffers' wire format is all this needs: a field is a key
 * (number << 3 | wire type) then a varint (type 0) or a length and bytes
 * (type 2: strings, nested messages, packed repeated numbers). The builder
 * keeps each kind of entry as encoded messages, deduplicated through one
 * hash table, and writes them in one pass; fields may come in any order,
 * and repeated ones keep theirs. */
#include "pprof.h"
#include "../grow.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum wire { WIRE_VARINT = 0, WIRE_BYTES = 2 };

/* Field numbers of profile.proto. */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
    PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
    LABEL_KEY = 1, LABEL_STR = 2,
    MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3, MAPPING_OFFSET = 4, MAPPING_FILENAME = 5,
    MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
    MAPPING_HAS_INLINE_FRAMES = 10,
    LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1, LINE_LINE = 2,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

static const char *const value_names[PPROF_VALUES][2] = {
    [PPROF_INUSE_OBJECTS] = { "inuse_objects", "count" },
    [PPROF_INUSE_SPACE] = { "inuse_space", "bytes" },
    [PPROF_ALLOC_OBJECTS] = { "alloc_objects", "count" },
    [PPROF_ALLOC_SPACE] = { "alloc_space", "bytes" },
};

/* --- encoding -------------------------------------------------------------- */

struct buf {
    uint8_t *bytes;
    size_t size, cap;
    bool failed;   /* memory ran out: everything after is dropped */
};

static void put_bytes(struct buf *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->size + n)
            cap *= 2;
        uint8_t *more = realloc(b->bytes, cap);
        if (!more) {
            b->failed = true;
            return;
        }
        b->bytes = more, b->cap = cap;
    }
    memcpy(b->bytes + b->size, data, n);
    b->size += n;
}

static void put_varint(struct buf *b, uint64_t v)
{
    uint8_t out[10];
    size_t n = 0;
    do {
        out[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    put_bytes(b, out, n);
}

static void put_key(struct buf *b, unsigned field, enum wire wire)
{
    put_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; proto3 leaves out a field at its default, 0. */
static void put_uint(struct buf *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    put_key(b, field, WIRE_VARINT);
    put_varint(b, v);
}

static void put_length_delimited(struct buf *b, unsigned field, const void *data, size_t n)
{
    put_key(b, field, WIRE_BYTES);
    put_varint(b, n);
    put_bytes(b, data, n);
}

static void put_message(struct buf *b, unsigned field, struct buf *message)
{
    b->failed |= message->failed;
    put_length_delimited(b, field, message->bytes, message->size);
    message->size = 0;
}

/* --- the builder --------------------------------------------------------- */

/* An entry's key for deduplication: a kind and up to four numbers (string
 * indices, ids, addresses). */
struct key {
    uint64_t kind, v[4];
};

struct pprof {
    size_t values;
    /* The string table: index 0 is "". */
    char **strings;
    size_t string_count, string_cap;
    /* Every deduplicated entry: strings (kind 0, v[0] its index), mappings,
     * functions, locations; open addressing over keys. */
    struct key *keys;
    uint64_t *ids;
    size_t slots, used;
    uint64_t mappings, functions, locations;
    struct buf body;      /* the encoded samples, mappings, locations, functions */
    struct buf scratch;   /* one message being made */
    struct buf line;      /* a nested one */
    struct buf comment;   /* the comment's string indices, packed */
};

enum { KEY_STRING, KEY_MAPPING, KEY_FUNCTION, KEY_LOCATION };

static uint64_t hash_bytes(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_key(const struct key *k)
{
    uint64_t h = k->kind * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 4; i++)
        h = (h ^ k->v[i]) * 0xC2B2AE3D27D4EB4Full;
    return h ^ h >> 29;
}

static bool grow_keys(struct pprof *p)
{
    size_t slots = p->slots ? p->slots * 2 : 1024;
    struct key *keys = calloc(slots, sizeof *keys);
    uint64_t *ids = calloc(slots, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return false;
    }
    for (size_t i = 0; i < p->slots; i++) {
        if (!p->ids[i])
            continue;
        size_t j = hash_key(&p->keys[i]) & (slots - 1);
        while (ids[j])
            j = (j + 1) & (slots - 1);
        keys[j] = p->keys[i], ids[j] = p->ids[i];
    }
    free(p->keys);
    free(p->ids);
    p->keys = keys, p->ids = ids, p->slots = slots;
    return true;
}

/* The slot of `k` (its id, or 0 where it would go); NULL when memory runs out.
 * Strings compare by text: their key holds the hash, the table the text. */
static uint64_t *find(struct pprof *p, const struct key *k, const char *text)
{
    if ((p->used + 1) * 2 > p->slots && !grow_keys(p))
        return NULL;
    size_t i = hash_key(k) & (p->slots - 1);
    for (; p->ids[i]; i = (i + 1) & (p->slots - 1)) {
        const struct key *o = &p->keys[i];
        if (o->kind != k->kind || memcmp(o->v, k->v, sizeof k->v) != 0)
            continue;
        if (k->kind != KEY_STRING || strcmp(p->strings[p->ids[i] - 1], text) == 0)
            return &p->ids[i];
    }
    p->keys[i] = *k;
    return &p->ids[i];
}

/* The string's index in the table (0 for NULL and ""); UINT64_MAX when
 * memory runs out. */
static uint64_t string_index(struct pprof *p, const char *s)
{
    if (!s || !*s)
        return 0;
    struct key k = { KEY_STRING, { hash_bytes(s, 0xcbf29ce484222325ull) } };
    uint64_t *id = find(p, &k, s);
    if (!id)
        return UINT64_MAX;
    if (*id)
        return *id - 1;
    char **strings = grow_array(p->strings, p->string_count, &p->string_cap, sizeof *strings, 256);
    char *copy = strings ? strdup(s) : NULL;
    if (!copy) {
        p->strings = strings ? strings : p->strings;
        return UINT64_MAX;
    }
    p->strings = strings;
    p->strings[p->string_count] = copy;
    *id = ++p->string_count;
    p->used++;
    return *id - 1;
}

struct pprof *pprof_new(size_t values)
{
    struct pprof *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->values = values >= 1 && values <= 2 ? values : PPROF_VALUES;
    /* Index 0 is "", kept out of the hash table (string_index answers 0). */
    if (!(p->strings = calloc(256, sizeof *p->strings)) || !(p->strings[0] = strdup(""))) {
        pprof_free(p);
        return NULL;
    }
    p->string_cap = 256;
    p->string_count = 1;
    for (size_t i = 0; i < p->values; i++) {
        put_uint(&p->scratch, VALUE_TYPE_TYPE, string_index(p, value_names[i][0]));
        put_uint(&p->scratch, VALUE_TYPE_UNIT, string_index(p, value_names[i][1]));
        put_message(&p->body, PROFILE_SAMPLE_TYPE, &p->scratch);
    }
    return p;
}

void pprof_free(struct pprof *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->string_count; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->keys);
    free(p->ids);
    free(p->body.bytes);
    free(p->scratch.bytes);
    free(p->line.bytes);
    free(p->comment.bytes);
    free(p);
}

/* An entry's id, made with `encode` the first time. */
static uint64_t entry(struct pprof *p, const struct key *k, uint64_t *counter, unsigned field,
                      void (*encode)(struct pprof *, uint64_t id, const void *), const void *arg)
{
    uint64_t *slot = find(p, k, NULL);
    if (!slot)
        return 0;
    if (*slot)
        return *slot;
    uint64_t id = ++*counter;
    encode(p, id, arg);
    if (p->scratch.failed || p->body.failed)
        return 0;
    put_message(&p->body, field, &p->scratch);
    *slot = id;
    p->used++;
    return id;
}

struct mapping_args { uint64_t start, limit, file, build_id; };

static void encode_mapping(struct pprof *p, uint64_t id, const void *arg)
{
    const struct mapping_args *m = arg;
    put_uint(&p->scratch, MAPPING_ID, id);
    put_uint(&p->scratch, MAPPING_START, m->start);
    put_uint(&p->scratch, MAPPING_LIMIT, m->limit);
    put_uint(&p->scratch, MAPPING_FILENAME, m->file);
    put_uint(&p->scratch, MAPPING_BUILD_ID, m->build_id);
    /* Named here: pprof must not look the addresses up again. */
    put_uint(&p->scratch, MAPPING_HAS_FUNCTIONS, 1);
    put_uint(&p->scratch, MAPPING_HAS_FILENAMES, 1);
    put_uint(&p->scratch, MAPPING_HAS_LINE_NUMBERS, 1);
    put_uint(&p->scratch, MAPPING_HAS_INLINE_FRAMES, 1);
}

uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, const char *file, const char *build_id)
{
    struct mapping_args m = { start, limit, string_index(p, file), string_index(p, build_id) };
    if (m.file == UINT64_MAX || m.build_id == UINT64_MAX)
        return 0;
    struct key k = { KEY_MAPPING, { start, limit, m.file, m.build_id } };
    return entry(p, &k, &p->mappings, PROFILE_MAPPING, encode_mapping, &m);
}

struct function_args { uint64_t name, system_name, file; };

static void encode_function(struct pprof *p, uint64_t id, const void *arg)
{
    const struct function_args *f = arg;
    put_uint(&p->scratch, FUNCTION_ID, id);
    put_uint(&p->scratch, FUNCTION_NAME, f->name);
    put_uint(&p->scratch, FUNCTION_SYSTEM_NAME, f->system_name);
    put_uint(&p->scratch, FUNCTION_FILENAME, f->file);
}

uint64_t pprof_function(struct pprof *p, const char *name, const char *system_name, const char *file)
{
    struct function_args f = { string_index(p, name), string_index(p, system_name), string_index(p, file) };
    if (f.name == UINT64_MAX || f.system_name == UINT64_MAX || f.file == UINT64_MAX)
        return 0;
    struct key k = { KEY_FUNCTION, { f.name, f.system_name, f.file } };
    return entry(p, &k, &p->functions, PROFILE_FUNCTION, encode_function, &f);
}

struct location_args { uint64_t mapping, address; const struct pprof_line *lines; size_t n; };

static void encode_location(struct pprof *p, uint64_t id, const void *arg)
{
    const struct location_args *l = arg;
    put_uint(&p->scratch, LOCATION_ID, id);
    put_uint(&p->scratch, LOCATION_MAPPING_ID, l->mapping);
    put_uint(&p->scratch, LOCATION_ADDRESS, l->address);
    for (size_t i = 0; i < l->n; i++) {
        put_uint(&p->line, LINE_FUNCTION_ID, l->lines[i].function);
        put_uint(&p->line, LINE_LINE, (uint64_t)l->lines[i].line);
        put_message(&p->scratch, LOCATION_LINE, &p->line);
    }
}

/* A location is one address of a mapping (its lines follow from it), or,
 * without an address (Ruby's lines), its one line. */
uint64_t pprof_location(struct pprof *p, uint64_t mapping, uint64_t address, const struct pprof_line *lines,
                        size_t n)
{
    struct key k = { KEY_LOCATION, { mapping, address, n ? lines[0].function : 0, n ? (uint64_t)lines[0].line : 0 } };
    if (address)
        k.v[2] = k.v[3] = 0;
    struct location_args l = { mapping, address, lines, n };
    return entry(p, &k, &p->locations, PROFILE_LOCATION, encode_location, &l);
}

bool pprof_sample(struct pprof *p, const uint64_t *locations, size_t n, const int64_t *values,
                  const char *const *labels, size_t label_pairs)
{
    struct buf packed = { 0 };
    for (size_t i = 0; i < n; i++)
        put_varint(&packed, locations[i]);
    put_length_delimited(&p->scratch, SAMPLE_LOCATION_ID, packed.bytes, packed.size);
    packed.size = 0;
    for (size_t i = 0; i < p->values; i++)
        put_varint(&packed, (uint64_t)values[i]);
    put_length_delimited(&p->scratch, SAMPLE_VALUE, packed.bytes, packed.size);
    p->scratch.failed |= packed.failed;
    free(packed.bytes);
    for (size_t i = 0; i < label_pairs; i++) {
        uint64_t key = string_index(p, labels[2 * i]), value = string_index(p, labels[2 * i + 1]);
        if (key == UINT64_MAX || value == UINT64_MAX)
            p->line.failed = true;
        put_uint(&p->line, LABEL_KEY, key);
        put_uint(&p->line, LABEL_STR, value);
        put_message(&p->scratch, SAMPLE_LABEL, &p->line);
    }
    put_message(&p->body, PROFILE_SAMPLE, &p->scratch);
    return !p->body.failed;
}

bool pprof_comment(struct pprof *p, const char *text)
{
    uint64_t index = string_index(p, text);
    if (index == UINT64_MAX)
        return false;
    put_varint(&p->comment, index);
    return !p->comment.failed;
}

/* `n` bytes through the gzip stream into `out`; `finish` ends it. */
static bool deflate_into(z_stream *z, FILE *out, const void *data, size_t n, bool finish)
{
    uint8_t chunk[1 << 16];
    z->next_in = (Bytef *)data;
    z->avail_in = (uInt)n;
    int rc;
    do {
        z->next_out = chunk;
        z->avail_out = sizeof chunk;
        rc = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR)
            return false;
        size_t made = sizeof chunk - z->avail_out;
        if (made && fwrite(chunk, 1, made, out) != made)
            return false;
    } while (z->avail_out == 0 || (finish && rc != Z_STREAM_END));
    return true;
}

int pprof_write(struct pprof *p, FILE *out, char *why, size_t why_size)
{
    /* The tail: what refers to sample types, the comment, then the strings
     * (each one's index is final once every entry is made). */
    struct buf tail = { 0 };
    uint64_t space = string_index(p, "space"), bytes = string_index(p, "bytes");
    put_uint(&p->scratch, VALUE_TYPE_TYPE, space);
    put_uint(&p->scratch, VALUE_TYPE_UNIT, bytes);
    put_message(&tail, PROFILE_PERIOD_TYPE, &p->scratch);
    put_uint(&tail, PROFILE_PERIOD, 1);
    if (p->comment.size)
        put_length_delimited(&tail, PROFILE_COMMENT, p->comment.bytes, p->comment.size);
    put_uint(&tail, PROFILE_DEFAULT_SAMPLE_TYPE,
             string_index(p, value_names[p->values > PPROF_INUSE_SPACE ? PPROF_INUSE_SPACE : PPROF_INUSE_OBJECTS][0]));
    for (size_t i = 0; i < p->string_count; i++)
        put_length_delimited(&tail, PROFILE_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
    if (p->body.failed || p->scratch.failed || p->comment.failed || tail.failed || space == UINT64_MAX ||
        bytes == UINT64_MAX) {
        free(tail.bytes);
        snprintf(why, why_size, "out of memory for the profile");
        return -1;
    }
    z_stream z = { 0 };
    /* 15 + 16: a gzip header and trailer, as pprof writes and reads. */
    bool ok = deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    ok = ok && deflate_into(&z, out, p->body.bytes, p->body.size, false) &&
         deflate_into(&z, out, tail.bytes, tail.size, true);
    deflateEnd(&z);
    free(tail.bytes);
    if (!ok)
        snprintf(why, why_size, "cannot write the profile: %s", strerror(errno ? errno : EIO));
    return ok ? 0 : -1;
}

/* --- reading ---------------------------------------------------------------- */

/* Profiles larger than this, inflated, are refused: no report comes near. */
#define MAX_PROFILE_BYTES ((size_t)1 << 30)

bool pprof_looks_like(FILE *in)
{
    int c = getc(in);
    if (c == EOF)
        return false;
    ungetc(c, in);
    return c == 0x1f;   /* gzip's first byte; never a text report's */
}

struct cursor {
    const uint8_t *at, *end;
    bool bad;
};

static uint64_t get_varint(struct cursor *c)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->at >= c->end) {
            c->bad = true;
            return 0;
        }
        uint8_t b = *c->at++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = true;
    return 0;
}

/* The next field of a message: false at its end or when malformed. A
 * length-delimited field's bytes go to *inner; a varint's value to *v. */
static bool next_field(struct cursor *c, unsigned *field, unsigned *wire, uint64_t *v, struct cursor *inner)
{
    while (c->at < c->end && !c->bad) {
        uint64_t key = get_varint(c);
        *field = (unsigned)(key >> 3);
        *wire = (unsigned)(key & 7);
        if (*wire == WIRE_VARINT) {
            *v = get_varint(c);
        } else if (*wire == WIRE_BYTES) {
            uint64_t n = get_varint(c);
            if (c->bad || n > (uint64_t)(c->end - c->at)) {
                c->bad = true;
                return false;
            }
            *inner = (struct cursor){ c->at, c->at + n, false };
            c->at += n;
        } else if (*wire == 1 || *wire == 5) {   /* fixed 64 and 32: skipped */
            size_t n = *wire == 1 ? 8 : 4;
            if ((size_t)(c->end - c->at) < n) {
                c->bad = true;
                return false;
            }
            c->at += n;
            continue;
        } else {
            c->bad = true;
            return false;
        }
        return !c->bad;
    }
    return false;
}

/* A repeated number, packed (bytes) or not (one varint): appended. */
static bool append_numbers(unsigned wire, uint64_t v, struct cursor *inner, uint64_t **items, size_t *n, size_t *cap)
{
    if (wire == WIRE_VARINT) {
        uint64_t *more = grow_array(*items, *n, cap, sizeof **items, 8);
        if (!more)
            return false;
        *items = more;
        (*items)[(*n)++] = v;
        return true;
    }
    while (inner->at < inner->end) {
        uint64_t x = get_varint(inner);
        if (inner->bad)
            return false;
        uint64_t *more = grow_array(*items, *n, cap, sizeof **items, 8);
        if (!more)
            return false;
        *items = more;
        (*items)[(*n)++] = x;
    }
    return true;
}

struct text { const uint8_t *at; size_t n; };
struct read_line { uint64_t function; int64_t line; };
struct read_location { uint64_t id, mapping, address; struct read_line *lines; size_t n, cap; };
struct read_function { uint64_t id, name, system_name, file; };
struct read_mapping { uint64_t id, start, limit, file, build_id; };
struct read_sample {
    uint64_t *locations, *values;
    size_t n_locations, cap_locations, n_values, cap_values;
    uint64_t *labels;       /* string labels: key and value string indices */
    size_t n_labels, cap_labels;
};

struct profile {
    struct text *strings;
    size_t n_strings, cap_strings;
    uint64_t types[8];   /* sample types' string indices */
    size_t n_types;
    struct read_location *locations;
    size_t n_locations, cap_locations;
    struct read_function *functions;
    size_t n_functions, cap_functions;
    struct read_mapping *mappings;
    size_t n_mappings, cap_mappings;
    struct read_sample *samples;
    size_t n_samples, cap_samples;
    uint64_t *comments;   /* string indices */
    size_t n_comments, cap_comments;
};

static void profile_free(struct profile *p)
{
    for (size_t i = 0; i < p->n_locations; i++)
        free(p->locations[i].lines);
    for (size_t i = 0; i < p->n_samples; i++) {
        free(p->samples[i].locations);
        free(p->samples[i].values);
        free(p->samples[i].labels);
    }
    free(p->strings);
    free(p->locations);
    free(p->functions);
    free(p->mappings);
    free(p->samples);
    free(p->comments);
}

static bool parse_sample(struct profile *p, struct cursor *c)
{
    struct read_sample *samples = grow_array(p->samples, p->n_samples, &p->cap_samples, sizeof *samples, 64);
    if (!samples)
        return false;
    p->samples = samples;
    struct read_sample *s = &p->samples[p->n_samples++];
    *s = (struct read_sample){ 0 };
    unsigned field, wire;
    uint64_t v = 0;
    struct cursor inner;
    while (next_field(c, &field, &wire, &v, &inner)) {
        if (field == SAMPLE_LOCATION_ID && !append_numbers(wire, v, &inner, &s->locations, &s->n_locations,
                                                           &s->cap_locations))
            return false;
        if (field == SAMPLE_VALUE && !append_numbers(wire, v, &inner, &s->values, &s->n_values, &s->cap_values))
            return false;
        if (field == SAMPLE_LABEL && wire == WIRE_BYTES) {
            uint64_t key = 0, str = 0;
            unsigned f2, w2;
            uint64_t v2 = 0;
            struct cursor unused;
            while (next_field(&inner, &f2, &w2, &v2, &unused))
                if (w2 == WIRE_VARINT)
                    *(f2 == LABEL_KEY ? &key : f2 == LABEL_STR ? &str : &v2) = v2;
            if (inner.bad || !append_numbers(WIRE_VARINT, key, NULL, &s->labels, &s->n_labels, &s->cap_labels) ||
                !append_numbers(WIRE_VARINT, str, NULL, &s->labels, &s->n_labels, &s->cap_labels))
                return false;
        }
    }
    return !c->bad;
}

static bool parse_location(struct profile *p, struct cursor *c)
{
    struct read_location *locations =
        grow_array(p->locations, p->n_locations, &p->cap_locations, sizeof *locations, 64);
    if (!locations)
        return false;
    p->locations = locations;
    struct read_location *l = &p->locations[p->n_locations++];
    *l = (struct read_location){ 0 };
    unsigned field, wire;
    uint64_t v = 0;
    struct cursor inner;
    while (next_field(c, &field, &wire, &v, &inner)) {
        if (field == LOCATION_ID && wire == WIRE_VARINT)
            l->id = v;
        if (field == LOCATION_MAPPING_ID && wire == WIRE_VARINT)
            l->mapping = v;
        if (field == LOCATION_ADDRESS && wire == WIRE_VARINT)
            l->address = v;
        if (field != LOCATION_LINE || wire != WIRE_BYTES)
            continue;
        struct read_line line = { 0 };
        unsigned f2, w2;
        uint64_t v2 = 0;
        struct cursor unused;
        while (next_field(&inner, &f2, &w2, &v2, &unused)) {
            if (f2 == LINE_FUNCTION_ID && w2 == WIRE_VARINT)
                line.function = v2;
            if (f2 == LINE_LINE && w2 == WIRE_VARINT)
                line.line = (int64_t)v2;
        }
        struct read_line *lines = grow_array(l->lines, l->n, &l->cap, sizeof *lines, 2);
        if (inner.bad || !lines)
            return false;
        l->lines = lines;
        l->lines[l->n++] = line;
    }
    return !c->bad;
}

/* A message's varint fields into the numbers they go to: fields[i] into *into[i]. */
static bool read_varint_fields(struct cursor *c, size_t n, const unsigned *fields, uint64_t *const *into)
{
    unsigned field, wire;
    uint64_t v = 0;
    struct cursor inner;
    while (next_field(c, &field, &wire, &v, &inner))
        for (size_t i = 0; wire == WIRE_VARINT && i < n; i++)
            if (field == fields[i])
                *into[i] = v;
    return !c->bad;
}

static bool parse_function(struct profile *p, struct cursor *c)
{
    struct read_function *functions =
        grow_array(p->functions, p->n_functions, &p->cap_functions, sizeof *functions, 64);
    if (!functions)
        return false;
    p->functions = functions;
    struct read_function *f = &p->functions[p->n_functions++];
    *f = (struct read_function){ 0 };
    static const unsigned fields[] = { FUNCTION_ID, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME };
    return read_varint_fields(c, 4, fields, (uint64_t *const[]){ &f->id, &f->name, &f->system_name, &f->file });
}

static bool parse_mapping(struct profile *p, struct cursor *c)
{
    struct read_mapping *mappings = grow_array(p->mappings, p->n_mappings, &p->cap_mappings, sizeof *mappings, 16);
    if (!mappings)
        return false;
    p->mappings = mappings;
    struct read_mapping *m = &p->mappings[p->n_mappings++];
    *m = (struct read_mapping){ 0 };
    static const unsigned fields[] = { MAPPING_ID, MAPPING_START, MAPPING_LIMIT, MAPPING_FILENAME, MAPPING_BUILD_ID };
    return read_varint_fields(c, 5, fields,
                              (uint64_t *const[]){ &m->id, &m->start, &m->limit, &m->file, &m->build_id });
}

static bool parse_profile(struct profile *p, struct cursor *c, const char **why)
{
    unsigned field, wire;
    uint64_t v = 0;
    struct cursor inner;
    while (next_field(c, &field, &wire, &v, &inner)) {
        bool ok = true;
        if (field == PROFILE_STRING_TABLE && wire == WIRE_BYTES) {
            struct text *strings = grow_array(p->strings, p->n_strings, &p->cap_strings, sizeof *strings, 256);
            if ((ok = strings != NULL)) {
                p->strings = strings;
                p->strings[p->n_strings++] = (struct text){ inner.at, (size_t)(inner.end - inner.at) };
            }
        } else if (field == PROFILE_SAMPLE_TYPE && wire == WIRE_BYTES) {
            uint64_t type = 0;
            unsigned f2, w2;
            uint64_t v2 = 0;
            struct cursor unused;
            while (next_field(&inner, &f2, &w2, &v2, &unused))
                if (f2 == VALUE_TYPE_TYPE && w2 == WIRE_VARINT)
                    type = v2;
            ok = !inner.bad;
            if (p->n_types < sizeof p->types / sizeof p->types[0])
                p->types[p->n_types++] = type;
        } else if (field == PROFILE_SAMPLE && wire == WIRE_BYTES) {
            ok = parse_sample(p, &inner);
        } else if (field == PROFILE_LOCATION && wire == WIRE_BYTES) {
            ok = parse_location(p, &inner);
        } else if (field == PROFILE_FUNCTION && wire == WIRE_BYTES) {
            ok = parse_function(p, &inner);
        } else if (field == PROFILE_MAPPING && wire == WIRE_BYTES) {
            ok = parse_mapping(p, &inner);
        } else if (field == PROFILE_COMMENT) {
            ok = append_numbers(wire, v, &inner, &p->comments, &p->n_comments, &p->cap_comments);
        }
        if (!ok) {
            *why = inner.bad ? "a malformed message" : strerror(ENOMEM);
            return false;
        }
    }
    if (c->bad)
        *why = "a malformed field";
    return !c->bad;
}

/* The whole input, inflated when it is gzipped: NULL with `why` set. */
static uint8_t *read_all(FILE *in, size_t *size, const char **why)
{
    struct buf raw = { 0 };
    uint8_t chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0 && !raw.failed && raw.size <= MAX_PROFILE_BYTES)
        put_bytes(&raw, chunk, n);
    if (ferror(in) || raw.failed || raw.size > MAX_PROFILE_BYTES) {
        *why = ferror(in) ? strerror(errno ? errno : EIO) : raw.failed ? strerror(ENOMEM) : "larger than 1 GiB";
        free(raw.bytes);
        return NULL;
    }
    if (raw.size < 2 || raw.bytes[0] != 0x1f || raw.bytes[1] != 0x8b) {
        *size = raw.size;
        return raw.bytes;
    }
    struct buf out = { 0 };
    z_stream z = { .next_in = raw.bytes, .avail_in = (uInt)raw.size };
    int rc = inflateInit2(&z, 15 + 16) == Z_OK ? Z_OK : Z_STREAM_ERROR;
    while (rc == Z_OK && !out.failed && out.size <= MAX_PROFILE_BYTES) {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        put_bytes(&out, chunk, sizeof chunk - z.avail_out);
        if (rc == Z_BUF_ERROR && z.avail_in == 0)
            break;   /* cut short */
    }
    inflateEnd(&z);
    free(raw.bytes);
    if (rc != Z_STREAM_END || out.failed) {
        *why = out.failed ? strerror(ENOMEM)
               : out.size > MAX_PROFILE_BYTES ? "larger than 1 GiB inflated"
                                              : "its gzip stream is damaged or cut short";
        free(out.bytes);
        return NULL;
    }
    *size = out.size;
    return out.bytes;
}

static const struct text *string_at(const struct profile *p, uint64_t i)
{
    static const struct text none = { (const uint8_t *)"", 0 };
    return i < p->n_strings ? &p->strings[i] : &none;
}

static bool text_is(const struct text *t, const char *s)
{
    return t->n == strlen(s) && memcmp(t->at, s, t->n) == 0;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Entries by id (the first field of each struct is its id). */
static const void *by_id_find(const void *items, size_t n, size_t size, uint64_t id)
{
    return bsearch(&id, items, n, size, by_id);
}

/* One frame's text, "function file:line", or the function alone when its
 * name already says where it is (Ruby's "file:line"). */
static void put_frame(struct buf *b, const struct profile *p, const struct read_line *line)
{
    const struct read_function *f =
        by_id_find(p->functions, p->n_functions, sizeof *p->functions, line ? line->function : 0);
    const struct text *name = string_at(p, f ? f->name : 0), *file = string_at(p, f ? f->file : 0);
    char where[64] = "";
    if (line && line->line)
        snprintf(where, sizeof where, ":%" PRId64, line->line);
    bool name_says_where = name->n > file->n && file->n && memcmp(name->at, file->at, file->n) == 0 &&
                           name->at[file->n] == ':';
    for (size_t i = 0; i < name->n; i++)
        put_bytes(b, name->at[i] == ';' || name->at[i] == '\n' ? (const uint8_t *)"," : &name->at[i], 1);
    if (!name->n)
        put_bytes(b, "??", 2);
    if (file->n && !name_says_where) {
        put_bytes(b, " ", 1);
        for (size_t i = 0; i < file->n; i++)
            put_bytes(b, file->at[i] == ';' || file->at[i] == '\n' ? (const uint8_t *)"," : &file->at[i], 1);
        put_bytes(b, where, strlen(where));
    }
}

/* A whole profile read into *p, whose strings point into *data (freed
 * after it): false with `why` set. */
static bool profile_load(FILE *in, struct profile *p, uint8_t **data, const char **why)
{
    size_t size = 0;
    *p = (struct profile){ 0 };
    *data = read_all(in, &size, why);
    struct cursor c = { *data, *data + size, false };
    if (!*data || !parse_profile(p, &c, why))
        return false;
    if (!p->n_strings || p->strings[0].n != 0) {
        *why = "its string table does not start with the empty string";
        return false;
    }
    return true;
}

int pprof_read_stacks(FILE *in, const char *name, struct stacks *out)
{
    *out = (struct stacks){ .kind = "pprof" };
    const char *why = NULL;
    uint8_t *data;
    struct profile p;
    bool ok = profile_load(in, &p, &data, &why);
    ssize_t objects = -1, space = -1;
    for (size_t i = 0; ok && i < p.n_types; i++) {
        const struct text *t = string_at(&p, p.types[i]);
        if (text_is(t, "inuse_objects"))
            objects = (ssize_t)i;
        else if (text_is(t, "inuse_space"))
            space = (ssize_t)i;
    }
    /* Another program's profile: its first type is the count. */
    if (ok && objects < 0 && space < 0)
        objects = 0;
    out->have_bytes = space >= 0;
    qsort(p.locations, p.n_locations, sizeof *p.locations, by_id);
    qsort(p.functions, p.n_functions, sizeof *p.functions, by_id);
    uint64_t class_key = 0;
    for (size_t i = 0; i < p.n_strings; i++)
        if (text_is(&p.strings[i], "class"))
            class_key = i;
    struct buf frames = { 0 };
    for (size_t s = 0; ok && s < p.n_samples; s++) {
        const struct read_sample *sample = &p.samples[s];
        frames.size = 0;
        for (size_t i = sample->n_locations; i-- > 0;) {
            const struct read_location *l =
                by_id_find(p.locations, p.n_locations, sizeof *p.locations, sample->locations[i]);
            if (frames.size)
                put_bytes(&frames, ";", 1);
            put_frame(&frames, &p, l && l->n ? &l->lines[0] : NULL);
        }
        for (size_t i = 0; class_key && i + 1 < sample->n_labels; i += 2) {
            if (sample->labels[i] != class_key)
                continue;
            const struct text *klass = string_at(&p, sample->labels[i + 1]);
            put_bytes(&frames, ";", 1);
            put_bytes(&frames, klass->at, klass->n);
            out->kind = "ruby";   /* frames as the Ruby table's */
            break;
        }
        put_bytes(&frames, "", 1);
        char *text = frames.failed ? NULL : strdup((const char *)frames.bytes);
        struct stack *rows = text ? grow_array(out->rows, out->count, &out->cap, sizeof *rows, 256) : NULL;
        if (!rows) {
            free(text);
            ok = false;
            why = strerror(ENOMEM);
            break;
        }
        out->rows = rows;
        uint64_t count = objects >= 0 && (size_t)objects < sample->n_values ? sample->values[objects] : 0;
        uint64_t bytes = space >= 0 && (size_t)space < sample->n_values ? sample->values[space] : 0;
        out->rows[out->count++] = (struct stack){ text, count, bytes, 0 };
    }
    free(frames.bytes);
    profile_free(&p);
    free(data);
    if (!ok) {
        fprintf(stderr, "memprof: cannot read %s as a pprof profile: %s\n", name, why ? why : strerror(ENOMEM));
        stacks_free(out);
        return -1;
    }
    return 0;
}

/* --- merging --------------------------------------------------------------- */

/* A profile string as a C string: NULL when memory runs out. */
static char *string_dup(const struct profile *p, uint64_t i)
{
    const struct text *t = string_at(p, i);
    return strndup((const char *)t->at, t->n);
}

/* The new id of the entry with `id` in `items` (sorted by id), whose new
 * ids are in `new_ids` at the same index: 0 when it has none. */
static uint64_t new_id(const void *items, size_t n, size_t size, const uint64_t *new_ids, uint64_t id)
{
    const uint8_t *found = by_id_find(items, n, size, id);
    return found ? new_ids[(size_t)(found - (const uint8_t *)items) / size] : 0;
}

/* Room for `need` items in *items (*cap of them): false when memory runs out. */
static bool room_for(void *items_ptr, size_t *cap, size_t size, size_t need)
{
    void **items = items_ptr;
    if (need <= *cap)
        return true;
    void *more = realloc(*items, 2 * need * size);
    if (!more)
        return false;
    *items = more;
    *cap = 2 * need;
    return true;
}

/* Profile `q`'s entries and samples added to `out`: NULL, or why not. */
static const char *merge_profile(struct pprof *out, struct profile *q)
{
    qsort(q->mappings, q->n_mappings, sizeof *q->mappings, by_id);
    qsort(q->functions, q->n_functions, sizeof *q->functions, by_id);
    qsort(q->locations, q->n_locations, sizeof *q->locations, by_id);
    const char *why = NULL;
    uint64_t *mapping_ids = calloc(q->n_mappings + 1, sizeof *mapping_ids);
    uint64_t *function_ids = calloc(q->n_functions + 1, sizeof *function_ids);
    uint64_t *location_ids = calloc(q->n_locations + 1, sizeof *location_ids);
    struct pprof_line *lines = NULL;
    uint64_t *sample_locations = NULL;
    int64_t *values = NULL;
    const char **labels = NULL;
    char **owned = NULL;   /* the label strings of one sample */
    size_t lines_cap = 0, locations_cap = 0, labels_cap = 0, owned_cap = 0, values_cap = 0;
    if (!mapping_ids || !function_ids || !location_ids)
        why = strerror(ENOMEM);
    for (size_t i = 0; !why && i < q->n_mappings; i++) {
        const struct read_mapping *m = &q->mappings[i];
        char *file = string_dup(q, m->file), *build_id = string_dup(q, m->build_id);
        if (!file || !build_id || !(mapping_ids[i] = pprof_mapping(out, m->start, m->limit, file, build_id)))
            why = strerror(ENOMEM);
        free(file);
        free(build_id);
    }
    for (size_t i = 0; !why && i < q->n_functions; i++) {
        const struct read_function *f = &q->functions[i];
        char *name = string_dup(q, f->name), *system_name = string_dup(q, f->system_name),
             *file = string_dup(q, f->file);
        if (!name || !system_name || !file || !(function_ids[i] = pprof_function(out, name, system_name, file)))
            why = strerror(ENOMEM);
        free(name);
        free(system_name);
        free(file);
    }
    for (size_t i = 0; !why && i < q->n_locations; i++) {
        const struct read_location *l = &q->locations[i];
        if (!room_for(&lines, &lines_cap, sizeof *lines, l->n + 1)) {
            why = strerror(ENOMEM);
            break;
        }
        for (size_t k = 0; k < l->n; k++) {
            lines[k] = (struct pprof_line){ new_id(q->functions, q->n_functions, sizeof *q->functions, function_ids,
                                                   l->lines[k].function),
                                            l->lines[k].line };
            if (!lines[k].function)
                why = "a location names a function it does not have";
        }
        uint64_t mapping = l->mapping ? new_id(q->mappings, q->n_mappings, sizeof *q->mappings, mapping_ids, l->mapping)
                                      : 0;
        if (l->mapping && !mapping)
            why = "a location names a mapping it does not have";
        if (!why && !(location_ids[i] = pprof_location(out, mapping, l->address, lines, l->n)))
            why = strerror(ENOMEM);
    }
    for (size_t s = 0; !why && s < q->n_samples; s++) {
        const struct read_sample *sample = &q->samples[s];
        size_t pairs = sample->n_labels / 2;
        if (!room_for(&sample_locations, &locations_cap, sizeof *sample_locations, sample->n_locations + 1) ||
            !room_for(&labels, &labels_cap, sizeof *labels, 2 * pairs + 1) ||
            !room_for(&owned, &owned_cap, sizeof *owned, 2 * pairs + 1) ||
            !room_for(&values, &values_cap, sizeof *values, out->values + 1)) {
            why = strerror(ENOMEM);
            break;
        }
        for (size_t k = 0; k < sample->n_locations; k++)
            if (!(sample_locations[k] = new_id(q->locations, q->n_locations, sizeof *q->locations, location_ids,
                                               sample->locations[k])))
                why = "a sample names a location it does not have";
        for (size_t k = 0; k < out->values; k++)
            values[k] = k < sample->n_values ? (int64_t)sample->values[k] : 0;
        for (size_t k = 0; k < 2 * pairs; k++)
            if (!(labels[k] = owned[k] = string_dup(q, sample->labels[k])))
                why = strerror(ENOMEM);
        if (!why && !pprof_sample(out, sample_locations, sample->n_locations, values, labels, pairs))
            why = strerror(ENOMEM);
        for (size_t k = 0; k < 2 * pairs; k++)
            free(owned[k]);
    }
    for (size_t i = 0; !why && i < q->n_comments; i++) {
        char *text = string_dup(q, q->comments[i]);
        if (!text || !pprof_comment(out, text))
            why = strerror(ENOMEM);
        free(text);
    }
    free(mapping_ids);
    free(function_ids);
    free(location_ids);
    free(lines);
    free(sample_locations);
    free(values);
    free(labels);
    free(owned);
    return why;
}

/* The sample types memprof writes with `n` of them: true when `q` has those. */
static bool types_are_memprofs(const struct profile *q, size_t n)
{
    if (q->n_types != n || !(n == 1 || n == 2 || n == PPROF_VALUES))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!text_is(string_at(q, q->types[i]), value_names[i][0]))
            return false;
    return true;
}

/* What a profile memprof wrote holds: Ruby objects (samples with a class
 * label), the C heap (addresses in mappings), or NULL when it cannot tell
 * (no samples). Both have the same sample types. */
static const char *profile_kind(const struct profile *q)
{
    for (size_t s = 0; s < q->n_samples; s++)
        for (size_t i = 0; i + 1 < q->samples[s].n_labels; i += 2)
            if (text_is(string_at(q, q->samples[s].labels[i]), "class"))
                return "Ruby objects";
    return q->n_mappings ? "C heap blocks" : NULL;
}

int pprof_merge(FILE *const *ins, const char *const *names, size_t n, FILE *out)
{
    struct pprof *merged = NULL;
    size_t values = 0;
    const char *kind = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct profile q;
        uint8_t *data;
        const char *why = NULL;
        if (!profile_load(ins[i], &q, &data, &why)) {
            fprintf(stderr, "memprof: merge: cannot read %s as a pprof profile: %s\n", names[i],
                    why ? why : strerror(ENOMEM));
            rc = 2;
        } else if (i == 0 && !types_are_memprofs(&q, q.n_types)) {
            fprintf(stderr, "memprof: merge: %s: not a profile memprof wrote (its sample types are not memprof's)\n",
                    names[i]);
            rc = 2;
        } else if (i > 0 && !types_are_memprofs(&q, values)) {
            fprintf(stderr, "memprof: merge: %s: its sample types are not those of %s (a C heap and a Ruby profile?)\n",
                    names[i], names[0]);
            rc = 2;
        } else if (kind && profile_kind(&q) && strcmp(kind, profile_kind(&q)) != 0) {
            fprintf(stderr, "memprof: merge: %s: a profile of live %s, not of live %s as %s\n", names[i],
                    profile_kind(&q), kind, names[0]);
            rc = 2;
        } else if (i == 0 && !(merged = pprof_new(values = q.n_types))) {
            fputs("memprof: merge: out of memory\n", stderr);
            rc = 1;
        } else if ((why = merge_profile(merged, &q))) {
            fprintf(stderr, "memprof: merge: %s: %s\n", names[i], why);
            rc = 2;
        }
        if (rc == 0 && !kind)
            kind = profile_kind(&q);
        profile_free(&q);
        free(data);
    }
    char why[256];
    if (rc == 0 && pprof_write(merged, out, why, sizeof why) != 0) {
        fprintf(stderr, "memprof: merge: %s\n", why);
        rc = 1;
    }
    pprof_free(merged);
    return rc;
}

#include "hash.h"
#include <elf.h>
#include <string.h>

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h = (h << 4) + *p;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static bool is_definition(const struct elf_object *obj, size_t i, const char *name)
{
    const ElfW(Sym) *s = &obj->symtab[i];
    if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) == STT_TLS)
        return false;
    const char *n = elf_object_symbol_name(obj, i);
    return n && strcmp(n, name) == 0;
}

static const ElfW(Sym) *lookup_gnu(const struct elf_object *obj, const char *name)
{
    const uint32_t *h = obj->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
    if (nbuckets == 0 || bloom_size == 0)
        return NULL;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)&h[4];
    const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
    const uint32_t *chain = &buckets[nbuckets];
    uint32_t hash = gnu_hash(name);

    /* The Bloom filter answers most misses without touching the chains. */
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % bits)) |
                      ((ElfW(Addr))1 << ((hash >> bloom_shift) % bits));
    if ((word & mask) != mask)
        return NULL;

    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h2 | 1) == (hash | 1) && is_definition(obj, i, name))
            return &obj->symtab[i];
        if (h2 & 1)
            return NULL;
    }
}

static const ElfW(Sym) *lookup_sysv(const struct elf_object *obj, const char *name)
{
    const ElfW(Word) *h = obj->sysv_hash;
    ElfW(Word) nbucket = h[0];
    if (nbucket == 0)
        return NULL;
    const ElfW(Word) *bucket = &h[2], *chain = &bucket[nbucket];
    for (ElfW(Word) i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i])
        if (is_definition(obj, i, name))
            return &obj->symtab[i];
    return NULL;
}

const ElfW(Sym) *elf_object_lookup(const struct elf_object *obj, const char *name)
{
    if (!obj->symtab || !obj->strtab)
        return NULL;
    if (obj->gnu_hash)
        return lookup_gnu(obj, name);
    if (obj->sysv_hash)
        return lookup_sysv(obj, name);
    return NULL;
}

uintptr_t elf_object_symbol_address(const struct elf_object *obj, const char *name)
{
    const ElfW(Sym) *s = elf_object_lookup(obj, name);
    return s ? obj->base + s->st_value : 0;
}

size_t elf_object_symbol_count(const struct elf_object *obj)
{
    if (!obj->symtab || !obj->strtab)
        return 0;
    if (obj->sysv_hash)
        return obj->sysv_hash[1];   /* nchain: one per symbol */
    if (!obj->gnu_hash)
        return 0;
    /* GNU hash: past the highest bucket's chain end. */
    const uint32_t *h = obj->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)&h[4];
    const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
    const uint32_t *chain = &buckets[nbuckets];
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; b++)
        if (buckets[b] > last)
            last = buckets[b];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return (size_t)last + 1;
}

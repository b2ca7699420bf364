#include "debugfile.h"
#include "sysroot.h"
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static Elf *open_elf(const char *path, int *fd)
{
    elf_version(EV_CURRENT);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return NULL;
    Elf *elf = elf_begin(*fd, ELF_C_READ, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf)
            elf_end(elf);
        close(*fd);
        return NULL;
    }
    return elf;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        if (!gelf_getshdr(scn, shdr))
            continue;
        const char *n = elf_strptr(elf, shstrndx, shdr->sh_name);
        if (n && strcmp(n, name) == 0)
            return scn;
    }
    return NULL;
}

bool elf_has_section(const char *path, const char *name)
{
    int fd;
    Elf *elf = open_elf(path, &fd);
    if (!elf)
        return false;
    GElf_Shdr shdr;
    bool has = find_section(elf, name, &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
    elf_end(elf);
    close(fd);
    return has;
}

/* The build-id note, as hex. */
static bool read_build_id(Elf *elf, char *hex, size_t hexlen)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nhdr;
        while (data && (off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
            if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
                memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0 || nhdr.n_descsz * 2 + 1 > hexlen)
                continue;
            const unsigned char *id = (const unsigned char *)data->d_buf + desc_off;
            for (size_t i = 0; i < nhdr.n_descsz; i++)
                snprintf(hex + 2 * i, 3, "%02x", id[i]);
            return nhdr.n_descsz > 0;
        }
    }
    return false;
}

bool elf_file_extent(const char *path, char *build_id, size_t build_id_len, uint64_t *extent)
{
    int fd;
    Elf *elf = open_elf(path, &fd);
    if (!elf)
        return false;
    if (!read_build_id(elf, build_id, build_id_len) && build_id_len)
        build_id[0] = '\0';
    size_t phnum = 0;
    *extent = 0;
    elf_getphdrnum(elf, &phnum);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > *extent)
            *extent = ph.p_vaddr + ph.p_memsz;
    }
    elf_end(elf);
    close(fd);
    return true;
}

/* .gnu_debuglink: a NUL-terminated name, padded to 4 bytes, then a CRC-32. */
static bool read_debuglink(Elf *elf, char *name, size_t namelen, unsigned long *crc)
{
    GElf_Shdr shdr;
    Elf_Scn *scn = find_section(elf, ".gnu_debuglink", &shdr);
    Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
    if (!data || data->d_size < 8)
        return false;
    const char *p = data->d_buf;
    size_t n = strnlen(p, data->d_size);
    size_t crc_at = (n + 4) & ~(size_t)3;
    if (n == 0 || n >= namelen || crc_at + 4 > data->d_size)
        return false;
    memcpy(name, p, n + 1);
    uint32_t c;
    memcpy(&c, p + crc_at, 4);
    *crc = c;
    return true;
}

static bool file_crc(const char *path, unsigned long *crc)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    unsigned long c = crc32(0L, Z_NULL, 0);
    unsigned char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        c = crc32(c, buf, (uInt)n);
    close(fd);
    *crc = c;
    return n == 0;
}

/* Each debug root in turn: MEMPROF_DEBUG_DIRS, the sysroot's /usr/lib/debug, /usr/lib/debug. */
static const char *next_root(const char **cursor, char *root, size_t rootlen)
{
    const char *p = *cursor;
    if (!p)
        return NULL;
    const char *end = strchrnul(p, ':');
    size_t n = (size_t)(end - p);
    if (n >= rootlen)
        n = rootlen - 1;
    memcpy(root, p, n);
    root[n] = '\0';
    *cursor = *end ? end + 1 : NULL;
    return root;
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

bool debugfile_find(const char *path, char *out, size_t outlen, struct debugfile_search *why)
{
    memset(why, 0, sizeof *why);
    int fd;
    Elf *elf = open_elf(path, &fd);
    if (!elf)
        return false;
    unsigned long want_crc = 0;
    why->has_build_id = read_build_id(elf, why->build_id, sizeof why->build_id);
    why->has_debuglink = read_debuglink(elf, why->debuglink, sizeof why->debuglink, &want_crc);
    elf_end(elf);
    close(fd);

    /* MEMPROF_DEBUG_DIRS, the sysroot's, the system's. */
    const char *env = getenv("MEMPROF_DEBUG_DIRS"), *sysroot = sysroot_dir();
    char roots[PATH_MAX * 3];
    snprintf(roots, sizeof roots, "%s%s%s%s/usr/lib/debug", env && *env ? env : "", env && *env ? ":" : "",
             sysroot, *sysroot ? "/usr/lib/debug:" : "");
    char root[PATH_MAX], candidate[PATH_MAX * 2];

    if (why->has_build_id && strlen(why->build_id) > 2) {
        const char *cursor = roots;
        while (next_root(&cursor, root, sizeof root)) {
            snprintf(candidate, sizeof candidate, "%s/.build-id/%.2s/%s.debug", root, why->build_id,
                     why->build_id + 2);
            if (readable(candidate) && strlen(candidate) < outlen) {
                strcpy(out, candidate);
                return true;
            }
        }
    }
    if (why->has_debuglink) {
        char copy[PATH_MAX], real[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", realpath(path, real) ? real : path);
        const char *dir = dirname(copy);
        char places[8][PATH_MAX * 2];
        int count = 0;
        snprintf(places[count++], sizeof places[0], "%s/%s", dir, why->debuglink);
        snprintf(places[count++], sizeof places[0], "%s/.debug/%s", dir, why->debuglink);
        const char *cursor = roots;
        while (count < 8 && next_root(&cursor, root, sizeof root))
            snprintf(places[count++], sizeof places[0], "%s%s/%s", root, dir, why->debuglink);
        for (int i = 0; i < count; i++) {
            unsigned long crc;
            if (!readable(places[i]) || strcmp(places[i], path) == 0 || !file_crc(places[i], &crc))
                continue;
            if (crc != want_crc) {
                why->crc_mismatch = true;
                continue;
            }
            if (strlen(places[i]) < outlen) {
                strcpy(out, places[i]);
                return true;
            }
        }
    }
    return false;
}

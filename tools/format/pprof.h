/* pprof's profile.proto (gzipped), the format `go tool pprof`, Pyroscope,
 * Parca, Grafana and speedscope read: written by a small encoder of our own
 * and read back into stacks. The message and field numbers are those of
 * proto/profile.proto in github.com/google/pprof; doc/formats.md says what
 * memprof puts in each. */
#ifndef MEMPROF_TOOLS_PPROF_H
#define MEMPROF_TOOLS_PPROF_H
#include "../report/stacks.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The sample types memprof writes, in this order: a profile without the
 * allocation counts (the Ruby table keeps live objects only) has the first
 * two, or the first alone when its input had no bytes. */
enum pprof_value { PPROF_INUSE_OBJECTS, PPROF_INUSE_SPACE, PPROF_ALLOC_OBJECTS, PPROF_ALLOC_SPACE, PPROF_VALUES };

struct pprof;

/* One line of a location: innermost first (a function inlined there, then
 * the one it is inlined into). */
struct pprof_line {
    uint64_t function;
    int64_t line;
};

/* NULL when memory runs out. `values`: 1, 2 or PPROF_VALUES types. */
struct pprof *pprof_new(size_t values);
void pprof_free(struct pprof *p);
/* Ids (from 1) of the entries made, each made once for the same arguments;
 * 0 when memory runs out (the profile then cannot be written). */
uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, const char *file, const char *build_id);
uint64_t pprof_function(struct pprof *p, const char *name, const char *system_name, const char *file);
uint64_t pprof_location(struct pprof *p, uint64_t mapping, uint64_t address, const struct pprof_line *lines,
                        size_t n);
/* A sample: its locations leaf first, its values, and string labels
 * (`labels` holds n pairs of key and value). */
bool pprof_sample(struct pprof *p, const uint64_t *locations, size_t n, const int64_t *values,
                  const char *const *labels, size_t label_pairs);
/* A line of the profile's comment (pprof -comments). */
bool pprof_comment(struct pprof *p, const char *text);
/* Gzipped into `out`: 0, or -1 with a one-line reason in `why`. */
int pprof_write(struct pprof *p, FILE *out, char *why, size_t why_size);

/* Does this input start as a gzip stream (a profile), not text? */
bool pprof_looks_like(FILE *in);
/* A profile (gzipped or not) read as stacks, each sample a row: frames
 * "function file:line" outermost first (the innermost line of each
 * location), a Ruby sample's class label as the innermost frame; count and
 * bytes from inuse_objects and inuse_space. 0, or -1 after a one-line
 * message naming `name`. Untrusted input: every length and index checked. */
int pprof_read_stacks(FILE *in, const char *name, struct stacks *out);

/* Profiles memprof wrote, of one kind (the same sample types), as one:
 * their mappings, functions and locations made once, every sample kept
 * (pprof adds samples with the same stack). 0; or 2 after a one-line
 * message naming the input that is damaged or of another kind, 1 when
 * memory runs out or `out` cannot be written. */
int pprof_merge(FILE *const *ins, const char *const *names, size_t n, FILE *out);

/* memprof's reports as profiles (heap_proto.c), gzipped into `out`: 0, or
 * -1 with a one-line reason in `why`. The runtime's raw C heap report, its
 * sites named (every sample type); stacks read by stacks_read (a Ruby
 * table or dump: "file:line" frames and a "class" label; inuse only). */
int heap_report_proto(FILE *raw, FILE *out, char *why, size_t why_size);
int stacks_proto(const struct stacks *s, FILE *out, char *why, size_t why_size);
#endif

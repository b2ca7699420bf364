/* The Ruby table (the runtime's, with its header) grouped the way
 * memory_profiler prints its report: by gem, file, location and class. */
#ifndef MEMPROF_TOOLS_RUBY_GROUPS_H
#define MEMPROF_TOOLS_RUBY_GROUPS_H
#include <stdio.h>

enum ruby_group { RUBY_GROUP_GEM = 1, RUBY_GROUP_FILE = 2, RUBY_GROUP_LOCATION = 4, RUBY_GROUP_CLASS = 8 };
/* Their names, in bit order, NULL-terminated: "gem", "file", "location", "class". */
extern const char *const ruby_group_words[];
/* The bit of a group's name (one of ruby_group_words), or 0. */
unsigned ruby_group_named(const char *word);

/* The gem a Ruby file belongs to (malloc'd, NULL when out of memory):
 * NAME-VERSION of a gems/NAME-VERSION/ tree (RubyGems', Debian's
 * rubygems-integration), a Debian package's library under vendor_ruby by its
 * top name, "stdlib", "app" for the program's own (under `app_dir`, where it
 * ran, or relative to it), "<internal>" for the VM's, else "other". */
char *ruby_gem_of(const char *file, const char *app_dir);
/* Totals, then for each group in `groups` (enum ruby_group bits) its tables:
 * allocated objects (when the table has that column), retained memory (when
 * it has bytes) and retained objects, largest first, `top` rows each (0:
 * all); then, with `strings_top`, that many of the string values most often
 * retained with the lines that made them (the table's strings section).
 * 0, or 1 after a message. */
int ruby_groups_write(FILE *table, FILE *out, unsigned groups, unsigned long top, const char *app_dir,
                      unsigned long strings_top);
#endif

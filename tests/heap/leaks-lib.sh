# Shared by the C heap tests on tests/heap/leaks.c: its lines by their
# LEAK: tags, a report's rows, and the program built once per test.
. "$srcdir/lib.sh"
cd "$TMP" || exit 1
src="$srcdir/heap/leaks.c"
line_of() { grep -n "LEAK:$2 \*/" "$1" | cut -d: -f1; }
LOOP=$(line_of "$src" loop) RECURSIVE=$(line_of "$src" recursive) REALLOC=$(line_of "$src" realloc)
PMA=$(line_of "$src" posix_memalign) AA=$(line_of "$src" aligned_alloc) THREAD=$(line_of "$src" thread)
PLUGIN=$(line_of "$srcdir/heap/plugin.c" plugin)

# row REPORT COUNT BYTES WHERE: a row with that count and bytes naming WHERE
# (e.g. "leaks.c:16 (leaks-O0)").
row() {
    awk -v c="$2" -v b="$3" -v w="$4" '$1 == c && $2 == b && index($0, w) && substr($0, length($0) - length(w) + 1) == w {found = 1}
        END {exit !found}' "$1" || { echo "#   no row '$2 $3 ... $4' in $1:"; sed 's/^/#     /' "$1"; return 1; }
}

# count_through REPORT AT: the count of the row whose stack has a caller at AT.
count_through() {
    awk -v at="$2" '/^ +[0-9]+ / { count = $1 } /^ +from / && index($0, at) { print count }' "$1"
}

# build_leaks NAME FLAGS: leaks.c built as leaks-NAME.
build_leaks() {
    $CC -g $2 -pthread -o "leaks-$1" "$src" -ldl
}

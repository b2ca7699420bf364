# TAP helpers for the suite's shell tests. Sourced; the environment comes from
# tests/Makefile.am (MEMPROF, RUNTIME, GDBINIT, GDB, GDB_MINIMAL, RUBY, ...).
set -u
srcdir=$(cd "$srcdir" && pwd)   # tests cd elsewhere
tap_n=0
tap_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memprof-test.XXXXXX")
# MEMPROF_TEST_KEEP=1 (doc/manual.md, "The test suite"): kept, and named.
trap 'if [ -n "${MEMPROF_TEST_KEEP:-}" ]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi' EXIT
# What the tools under test keep in TMPDIR (GDB's snapshots, say) goes too.
TMPDIR=$TMP; export TMPDIR
# Names remembered across runs (name_cache.h) are each test's own: a test
# starts cold, as a fresh machine does, and leaves nothing in ~/.cache.
XDG_CACHE_HOME=$TMP/.cache; export XDG_CACHE_HOME

# ok DESCRIPTION COMMAND [ARGS...]: one TAP line from the command's status,
# which it returns, so that `ok ... || DIAGNOSTIC` prints the diagnostic
# when the check fails.
ok() {
    desc=$1; shift
    tap_n=$((tap_n + 1))
    if "$@"; then
        echo "ok $tap_n - $desc"
        return 0
    fi
    echo "not ok $tap_n - $desc"
    tap_failed=$((tap_failed + 1))
    return 1
}

# has_line FILE LINE: FILE holds exactly LINE as one of its lines.
has_line() {
    grep -qxF -- "$2" "$1" || { echo "#   no line '$2' in $1:"; sed 's/^/#     /' "$1" | head -20; return 1; }
}

# matches FILE ERE: a line of FILE matches the extended regular expression.
matches() {
    grep -qE -- "$2" "$1" || { echo "#   no line matching '$2' in $1:"; sed 's/^/#     /' "$1" | tail -20; return 1; }
}

# lacks FILE PATTERN: no line of FILE matches the fixed string.
lacks() {
    ! grep -qF -- "$2" "$1" || { echo "#   unexpected '$2' in $1"; return 1; }
}

# equals A B: two strings are equal.
equals() {
    [ "$1" = "$2" ] || { echo "#   expected '$2', got '$1'"; return 1; }
}

# qemu_core CORE [FILE...] -- QEMU ARGS...: a qemu-user (QEMU: qemu-x86_64,
# qemu-aarch64) runs ARGS in qemu.d, holding copies of FILE, and writes its
# guest's core there on a fatal signal (qemu_PROG_DATE_PID.core: no NT_FILE);
# that core moved to CORE. A directory named `core` keeps the kernel's core of
# qemu itself out (core_pattern "core").
qemu_core() {
    core_out=$1; shift
    rm -rf qemu.d && mkdir -p qemu.d/core
    while [ "$1" != -- ]; do cp "$1" qemu.d/; shift; done
    shift
    (cd qemu.d && ulimit -c unlimited && "$@" > out 2>&1; true) 2> /dev/null
    mv qemu.d/qemu_*.core "$core_out" 2> /dev/null
}

# one_line FILE: FILE has exactly one line, beginning with "memprof: ".
one_line() {
    [ "$(wc -l < "$1")" -eq 1 ] && grep -q '^memprof: ' "$1" ||
        { echo "#   not a one-line memprof message:"; sed 's/^/#     /' "$1"; return 1; }
}

# within SECONDS COMMAND [ARGS...]: until COMMAND succeeds, at most SECONDS.
# Tests wait for what a process says, never for a guessed time.
within() {
    tries=$(( $1 * 20 )); shift
    until "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.05
    done
}

# wait_for FILE PATTERN [SECONDS]: until a line of FILE matches the basic
# regular expression (a process says it is ready), at most SECONDS (30).
wait_for() {
    within "${3:-30}" grep -q -- "$2" "$1" 2>/dev/null || { echo "#   waited in vain for '$2' in $1"; return 1; }
}

# grows FILE: FILE gets more lines (the process writing it runs on), within 10 s.
grows() {
    before=$(wc -l < "$1")
    within 10 sh -c '[ "$(wc -l < "$1")" -gt "$2" ]' grows "$1" "$before" ||
        { echo "#   $1 stopped growing at $before lines"; return 1; }
}

# relay PREFIX FILE: the TAP a C test program wrote (tests/tap.h) as this
# test's lines, each description after PREFIX; its plan must count the lines
# it wrote, so a program that stopped half-way fails here.
relay() {
    relay_prefix=$1 relay_n=0 relay_plan=none
    while IFS= read -r relay_line; do
        case $relay_line in
        "ok "*) relay_n=$((relay_n + 1)); ok "$relay_prefix${relay_line#ok * - }" true ;;
        "not ok "*) relay_n=$((relay_n + 1)); ok "$relay_prefix${relay_line#not ok * - }" false ;;
        "1.."*) relay_plan=${relay_line#1..} ;;
        "#"*) echo "$relay_line" ;;
        esac
    done < "$2"
    ok "${relay_prefix}the program's plan counts its $relay_n checks" equals "$relay_plan" "$relay_n"
}

# need DESCRIPTION COMMAND [ARGS...]: what a test stands on (a tool's output,
# a program built for it), not a check of memprof: when it fails the whole
# file stops ("Bail out!", an error in the harness's summary), uncounted.
need() {
    need_desc=$1; shift
    "$@" || { echo "Bail out! $need_desc"; exit 1; }
}

# field_test WHAT: a field test (real software under load, minutes long)
# ends here, skipped with the reason, where MEMPROF_FIELD_TESTS=no (make
# distcheck: make check ran it on the same sources).
field_test() {
    if [ "${MEMPROF_FIELD_TESTS:-yes}" = no ]; then
        echo "1..0 # SKIP $1: a field test, run by make check; MEMPROF_FIELD_TESTS=no here (make distcheck)"
        exit 0
    fi
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}

# gdb_calls: the path of a GDB script, run before a process starts, that
# lets GDB call into it (print f()) without memprof.gdbinit, for a test's
# own calls: on a CPU with AMX, GDB before 14 can only with x86-64's
# registers up to SSE, as memprof.gdbinit gives it (memprof--amx-registers).
# Empty elsewhere.
gdb_calls() {
    if [ ! -f "$TMP/gdb-calls.gdb" ]; then
        : > "$TMP/gdb-calls.gdb"
        major=$("$GDB" -nx -batch -ex 'print $_gdb_major' 2> /dev/null | sed -n 's/^\$1 = //p')
        if [ "$(uname -m)" = x86_64 ] && grep -qw amx_tile /proc/cpuinfo && [ "${major:-0}" -lt 14 ]; then
            echo "set tdesc filename $srcdir/../gdbinit/memprof-amd64-sse.xml" > "$TMP/gdb-calls.gdb"
        fi
    fi
    echo "$TMP/gdb-calls.gdb"
}

# slots FILE SECTION: the GOT slots memprof-status counted after the line
# [SECTION] (echoed before it).
slots() {
    sed -n "/^\[$2\]/,\$p" "$1" | sed -n 's/^  hooks: *\([0-9]*\) GOT slots patched.*/\1/p' | head -1
}

# Label for a GDB binary in test names: gdb or gdb-minimal.
gdb_name() {
    if [ "$1" = "$GDB" ]; then echo gdb; else echo gdb-minimal; fi
}

# The seeds' program, run from a directory of its own so it reports as test.rb.
seeds_dir() {
    mkdir -p "$TMP/seeds"
    cp "$srcdir/../examples/test.rb" "$TMP/seeds/test.rb"
    echo "$TMP/seeds"
}

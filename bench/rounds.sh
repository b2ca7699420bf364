# The benchmarks' shared arithmetic over interleaved rounds; sourced by
# heap-bench, shapes-bench, ruby-bench, ruby-groups-bench, heap-builds and
# symbolize-bench.

# The median of the numbers on stdin.
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# "P25-P75" of the numbers on stdin.
middle_half() { sort -g | awk '{v[NR] = $1} END {printf "%.2f-%.2f", v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)]}'; }

# round_order ROUND CONFIG...: the configurations, one per line, in an
# order of the round's own (a shuffle seeded by ROUND), so that none always
# runs first, nor always after the same one (a rotation kept each behind the
# same one every round): on this VM, grow's hooks right after its plain run
# took 3-12 ms more than later in the round (the host taking back the memory
# a run freed is the likely cause).
round_order() {
    k=$1; shift
    echo "$@" | awk -v k="$k" '{
        srand(k)
        for (j = 1; j <= NF; j++) c[j] = $j
        for (j = NF; j > 1; j--) { r = int(rand() * j) + 1; t = c[j]; c[j] = c[r]; c[r] = t }
        for (j = 1; j <= NF; j++) print c[j]
    }'
}

# round_ratios FILE PLAIN [COLUMN]: each round's figure in FILE over the
# same round's in PLAIN (column 1, the seconds, unless COLUMN says; lines of
# "seconds maxrss_kb [cpu_seconds]", round k on line k; a file with fewer
# rounds, a peer run in the first ones only, pairs with those).
round_ratios() {
    width=$(head -1 "$2" | awk '{print NF}')
    paste -d' ' "$1" "$2" | awk -v w="$width" -v c="${3:-1}" 'NF == 2 * w {print $c / $(w + c)}'
}

# build_measure BENCH_DIR: the benchmarks' timer (measure.c: wall time,
# max RSS and CPU time of a run) as $tmp/measure, for timed_run.
build_measure() { cc -O2 -o "$tmp/measure" "$1/measure.c"; }

# timed_run NAME CMD...: one timed run, "seconds maxrss_kb cpu_seconds"
# appended to $tmp/NAME; a failed run ends the benchmark with its message.
timed_run() {
    name=$1; shift
    "$tmp/measure" "$tmp/$name" "$@" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
}

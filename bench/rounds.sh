# The benchmarks' shared arithmetic over interleaved rounds; sourced by
# heap-bench, ruby-bench, heap-builds and symbolize-bench.

# The median of the numbers on stdin.
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# "P25-P75" of the numbers on stdin.
middle_half() { sort -g | awk '{v[NR] = $1} END {printf "%.2f-%.2f", v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)]}'; }

# rotated ROUND CONFIG...: the configurations, one per line, starting ROUND-1
# further along, so that none always runs first.
rotated() {
    k=$1; shift
    echo "$@" | awk -v k="$k" '{ for (j = 0; j < NF; j++) print $((j + k - 1) % NF + 1) }'
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

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

# round_ratios FILE PLAIN: each round's seconds in FILE over the same
# round's in PLAIN ("seconds maxrss" lines, round k on line k; a file with
# fewer rounds, a peer run in the first ones only, pairs with those).
round_ratios() { paste -d' ' "$1" "$2" | awk 'NF == 4 {print $1 / $3}'; }

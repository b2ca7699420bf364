# The mixed workload of the Ruby benchmark: about 8M allocations (strings,
# arrays, hashes), 1% of iterations retained.
iterations = Integer(ENV.fetch('ITERATIONS', 2_000_000))
kept = []
i = 0
while i < iterations
  s = "item #{i}"
  a = [i, s]
  h = { id: i, pair: a }
  kept << h if i % 100 == 0
  i += 1
end
$kept = kept
warn "allocations: #{GC.stat(:total_allocated_objects)}" if ENV['BENCH_COUNT']

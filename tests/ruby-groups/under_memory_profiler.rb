# posts.rb's work under memory_profiler, its report in ARGV[0].
require 'memory_profiler'
require_relative 'posts'
report = MemoryProfiler.report(top: 1_000_000) { $kept = work }   # every row, as memprof --top 1000000
report.pretty_print(to_file: ARGV[0], scale_bytes: false, normalize_paths: false)

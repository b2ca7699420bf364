# posts.rb's work under Memprof.report's block, as under_memory_profiler.rb
# measures it: its report in ARGV[0].
require 'memprof'
require_relative 'posts'
report = Memprof.report(top: 1_000_000) { $kept = work }
report.pretty_print(to_file: ARGV[0])

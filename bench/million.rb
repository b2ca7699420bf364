# Memory and report time at scale: 1M live strings, then memprof's own table
# size per tracked object and the time of one full report. Run under memprof.
require 'memprof'
$kept = Array.new(1_000_000) { |i| i.to_s }
GC.start
usage = Memprof.usage
t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
Memprof.report
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
puts format('%d records, %d bytes of tables (%.1f bytes per record), report in %.3f s',
            usage[:objects], usage[:bytes], usage[:bytes].fdiv(usage[:objects]), seconds)

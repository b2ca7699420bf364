require 'memprof'
Memprof.start
require "stringio"
StringIO.new
Memprof.stats
GC.start
Memprof.stats

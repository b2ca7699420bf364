# The Ruby tracer's torture (tests/ruby-torture.test): run under memprof run
# with the Ruby API loaded.
# Each phase allocates, kills and keeps objects while memprof records, and
# takes reports in between; the survivors are counted by ObjectSpace too.
require 'objspace'
class Kept; end
$kept = []
def phase(name)
  yield
  Memprof.stats(File::NULL)
  puts "#{name} ok"
end
phase("stress") do
  GC.stress = true
  200.times { |i| $kept << Kept.new if i % 10 == 0; "s#{i}" * 2; [i, i.to_s] }
  GC.stress = false
end
phase("compact") do
  5.times do
    junk = Array.new(20_000) { |i| "c#{i}" }
    $kept.concat(Array.new(10) { Kept.new })
    junk = nil
    GC.start
    GC.compact
    Memprof.stats(File::NULL)
  end
end
phase("dlopen") do
  3.times do
    junk = Array.new(300) { Array.new(100) { "d" + "x" } }
    junk = nil
    GC.start; GC.start
    Encoding.name_list.each { |n| Encoding.find(n) rescue nil }
    require 'fiddle'; require 'digest'; require 'zlib'; require 'bigdecimal'
    GC.start(immediate_sweep: false)
    Memprof.stats(File::NULL)
  end
end
phase("threads") do
  ts = Array.new(8) { |t| Thread.new { 2000.times { |i| x = "t#{t}-#{i}"; $kept << Kept.new if i % 500 == 0 } } }
  r = Thread.new { 20.times { Memprof.stats(File::NULL); Thread.pass } }
  ts.each(&:join); r.join
end
phase("exceptions") do
  1000.times { |i| begin; raise ArgumentError, "e#{i}"; rescue => e; $kept << Kept.new if i % 250 == 0; end }
end
phase("finalizers") do
  200.times { |i| o = Object.new; ObjectSpace.define_finalizer(o, proc { "f" * 3 }) }
  GC.start
end
phase("each_object") do
  n = 0
  ObjectSpace.each_object(String) { |s| n += 1; "e" + "o" if n % 1000 == 0 }
end
phase("fork") do
  pid = fork { $kept << Kept.new; Memprof.stats(File::NULL); exit!(0) }
  Process.wait(pid)
  raise "child failed" unless $?.success?
end
GC.start
puts "ObjectSpace: #{ObjectSpace.each_object(Kept).count} Kept"
phase("ractors") do
  Warning[:experimental] = false
  rs = Array.new(3) { |k| Ractor.new(k) { |k| a = Array.new(3000) { |i| "r#{k}-#{i}" }; a.size } }
  rs.each(&:take)
  Memprof.stats(File::NULL)
end
GC.start
puts "kept: #{$kept.size} Kept"
Memprof.stats($stdout, filter: ":Kept")

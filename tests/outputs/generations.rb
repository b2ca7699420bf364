# The outputs tests' Ruby workload: objects made in two known GC generations
# (printed), kept alive; then, if asked, Memprof.dump and ObjectSpace.dump_all
# of the heap at one instant (nothing in between makes objects of those
# generations).
$keep = []
3.times { GC.start }
puts "first #{GC.count}"
$keep << Array.new(1000) { "a" * 50 }
GC.start
puts "second #{GC.count}"
$keep << Array.new(500) { [1, 2] }
GC.start
Memprof.dump(ENV['MEMPROF_API_DUMP']) if ENV['MEMPROF_API_DUMP']
if ENV['OBJSPACE_DUMP']
  File.open(ENV['OBJSPACE_DUMP'], 'w') { |f| ObjectSpace.dump_all(output: f) }
end
Process.kill(:TRAP, $$) if ENV['STOP']   # a stop for GDB

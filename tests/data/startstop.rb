# Stops three times for GDB (see gdb-start-stop-reset.test).
$a = []
10.times { $a << "made while recording" }
Process.kill(:TRAP, Process.pid) # stop 1: memprof-stop
$b = []
20.times { $b << "made while stopped" }
Process.kill(:TRAP, Process.pid) # stop 2: memprof-start
$c = []
30.times { $c << "made after restart" }
Process.kill(:TRAP, Process.pid) # stop 3: memprof-info, memprof-reset, memprof-info

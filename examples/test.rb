# memprof: the seeds' example

@blah = Hash.new([])

# start
100.times {
  @blah[1] << "aaaaa"
}

1000.times {
   @blah[2] << "bbbbb"
}
Process.kill(:TRAP, Process.pid) if ENV["MEMPROF_TEST_STOP"] # a place for GDB to stop

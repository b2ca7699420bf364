# A cached native thread about to start the next Ruby thread: its TLS still
# names the finished thread's context. That context is made to look like
# reused memory (a stack of one frame whose ep points nowhere) while the
# thread allocates in pthread_getattr_np, and put back when it returns.
set pagination off
set confirm off
set breakpoint pending on
break pthread_getattr_np if $_thread != 1 && *(long*)&ruby_current_ec != 0
commands
  silent
  set $ec = *(long*)&ruby_current_ec
  set $w0 = *(long*)($ec)
  set $w1 = *(long*)($ec + 8)
  set $w2 = *(long*)($ec + 16)
  set $w3 = *(long*)($ec + 96)
  set *(long*)($ec) = $ec
  set *(long*)($ec + 8) = 64
  set *(long*)($ec + 16) = $ec + 64
  set *(long*)($ec + 96) = 16
  printf "poisoned the finished thread's context\n"
  tbreak *(*(long*)$sp)
  commands
    silent
    set *(long*)($ec) = $w0
    set *(long*)($ec + 8) = $w1
    set *(long*)($ec + 16) = $w2
    set *(long*)($ec + 96) = $w3
    printf "put the context back\n"
    continue
  end
  continue
end
run

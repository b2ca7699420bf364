# memprof's own fault, made on purpose: the GVL's owner pointed at nothing
# while a thread that does not hold it allocates.
set pagination off
set confirm off
set breakpoint pending on
break pthread_getattr_np if $_thread != 1 && *(long*)&ruby_current_ec != 0
commands
  silent
  set *(long*)((long)ruby_single_main_ractor + $owner_offset) = 16
  printf "the GVL's owner points nowhere\n"
  # Only this thread runs on: the main thread, handing the GVL over, would
  # put a real owner back before this one's next malloc reads it.
  set scheduler-locking on
  continue
end
handle SIGSEGV nostop noprint pass
handle SIGABRT nostop noprint pass
run

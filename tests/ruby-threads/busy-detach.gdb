# memprof-detach while a thread stopped inside a hook holds the Ruby tables
# (the lock's word set as such a thread leaves it): busy at once, nothing
# undone; once the lock is free, detached.
set pagination off
set confirm off
handle SIGTRAP stop print
run
set var ruby_tracer.lock.held = 99
memprof-detach
printf "@first=%d recording=%d\n", $memprof_status, ruby_recording
set var ruby_tracer.lock.held = 0
memprof-detach
printf "@second=%d recording=%d\n", $memprof_status, ruby_recording
kill

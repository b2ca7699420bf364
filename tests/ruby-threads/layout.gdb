# ruby_abi.h's thread layout read off the running VM: stopped in the main
# thread, which holds the GVL, the words at those offsets are what GDB knows
# from elsewhere (libthread_db's thread id, the TLS variable, the VM's
# globals). The offsets come in as $vm_main, $gvl_owner, $ractor_main,
# $th_ractor, $th_ec and $th_id.
set pagination off
set confirm off
handle SIGTRAP stop print
run
set $vm = (long)ruby_current_vm_ptr
set $ractor = (long)ruby_single_main_ractor
set $th = *(long*)($vm + $vm_main)
printf "main thread named alike by the VM and the ractor: %d\n", $th != 0 && $th == *(long*)($ractor + $ractor_main)
printf "the GVL's owner is the main thread: %d\n", *(long*)($ractor + $gvl_owner) == $th
printf "the thread's ractor: %d\n", *(long*)($th + $th_ractor) == $ractor
printf "the thread's ec is ruby_current_ec: %d\n", *(long*)($th + $th_ec) == *(long*)&ruby_current_ec
printf "the thread's id is its pthread_t: %d\n", *(long*)($th + $th_id) == $fs_base
kill

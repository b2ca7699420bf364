# A finished thread's native thread, kept by Ruby 3.1's thread cache, starts
# the next Thread.new.
$kept = []
Thread.new { $kept << "a" * 100_000 }.join
Thread.new { $kept << "b" * 200_000 }.join
puts "both threads ran"

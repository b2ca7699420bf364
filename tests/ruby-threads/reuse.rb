# A finished thread's native thread, kept by Ruby 3.1's thread cache (3 s), starts the next Thread.new; the
# pause lets it reach the cache (join returns first: under load the next Thread.new made a native thread).
$kept = []
Thread.new { $kept << "a" * 100_000 }.join; sleep 0.3
Thread.new { $kept << "b" * 200_000 }.join
puts "both threads ran"

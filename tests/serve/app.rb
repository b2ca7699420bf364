# A program that keeps strings made at one line and allocates all the time
# (a server between requests), until its stdin closes.
$kept = []
Thread.new { $stdin.read; exit 0 }
puts 'ready'
$stdout.flush
loop do
  $kept << "kept #{rand}" # KEPT
  $kept.shift if $kept.size > 2000
  sleep 0.001
end

# In its GC most of the time: a full GC again and again, a string made
# between two (servers.test attaches to it).
$kept = Array.new(500)
$stdout.sync = true
puts "ready"
loop do
  $kept[rand(500)] = "k" * 30 # MADE
  GC.start
end

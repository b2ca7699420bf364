# A long-running program to attach to: it keeps the last 2,000 requests.
$stdout.sync = true
requests = []
n = 0
loop do
  requests << "request #{n += 1} " * 3
  requests.shift if requests.size > 2000
  puts "served #{n}" if n % 1000 == 0
  sleep 0.0005
end

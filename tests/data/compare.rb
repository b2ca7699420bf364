# Compare memprof's live table with ObjectSpace.trace_object_allocations' on
# the same run: for every file:line:Class of the workload, the same count.
# usage: ruby -I RUBYDIR compare.rb WORKLOAD.rb [--compact]
require 'objspace'
require 'memprof'
workload = File.expand_path(ARGV.fetch(0))
Memprof.start
ObjectSpace.trace_object_allocations_start
load workload
GC.compact if ARGV.include?('--compact')
GC.start
# Tracing stays on: ObjectSpace forgets an object only while it traces, and an
# object made after a stop, at a dead one's address, would inherit its site.
GC.disable

theirs = Hash.new(0)
ObjectSpace.each_object do |o|
  next unless ObjectSpace.allocation_sourcefile(o) == workload
  theirs["#{workload}:#{ObjectSpace.allocation_sourceline(o)}:#{o.class}"] += 1
end
ours = Hash.new(0)
Memprof.report(filter: workload).each_line do |l|
  count, site = l.split(' ', 2)
  site = site.chomp
  next unless site.start_with?("#{workload}:")
  # ObjectSpace.each_object lists no imemo, hidden object or singleton class.
  next if site.end_with?(':(imemo)', ':(singleton class)') || site.include?(':(hidden ')
  ours[site] += count.to_i
end
keys = (theirs.keys | ours.keys).sort
bad = keys.reject { |k| theirs[k] == ours[k] }
puts "sites #{keys.size} objects #{theirs.values.sum} memprof #{ours.values.sum}"
bad.each { |k| puts "DIFF #{k}: ObjectSpace #{theirs[k]} memprof #{ours[k]}" }
exit(bad.empty? && !keys.empty? ? 0 : 1)

# A mixed workload: JSON, ERB, CSV, Set, StringIO, Struct, user classes and
# exceptions. Everything it keeps goes in $kept, so the live objects it made
# are known to memprof and to ObjectSpace alike.
require 'json'
require 'erb'
require 'csv'
require 'set'
require 'stringio'

Point = Struct.new(:x, :y)
class Node
  def initialize(name) = @name = name
end
class Leaf < Node; end
class AppError < StandardError; end

$kept = []
20.times do |i|
  $kept << JSON.parse(%Q({"a": [1, 2, {"b": "c#{i}"}], "d": "e"}))
  $kept << ERB.new("<%= x %> and <%= x * 2 %>").result_with_hash(x: i)
  $kept << CSV.parse("a,b,c\n#{i},2,3\n")
  $kept << Set.new([i, i + 1, "s#{i}"])
  io = StringIO.new(+"")
  io.puts "line #{i}"
  $kept << io
  $kept << Point.new(i, "y#{i}")
  $kept << Node.new("n#{i}") << Leaf.new("l#{i}")
  begin
    raise AppError, "failed #{i}"
  rescue AppError => e
    $kept << e
  end
  $kept << [i] * 3 << { i => i.to_s } << i.to_s * 2 << (i..i + 2) << 2**80 + i << i.to_f / 3
end

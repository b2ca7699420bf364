# The micro loop of the Ruby benchmark: 5M "abc" literals, none kept.
n = Integer(ENV.fetch('ITERATIONS', 5_000_000))
i = 0
while i < n
  s = "abc"
  i += 1
end

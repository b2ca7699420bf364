# Calls into tests/heap/ruby_ext.c from known lines (heap-ruby.test).
require File.join(ARGV[0], "ruby_ext")

def from_a_method
  LeakyExt.leak(48) # RUBY:method
end

10.times { LeakyExt.leak(100) } # RUBY:loop
3.times { from_a_method }
LeakyExt.churn(1000) # RUBY:churn
LeakyExt.keep("twelve chars") # RUBY:keep
LeakyExt.keep_buffer(125) # RUBY:buffer
threads = 4.times.map { Thread.new { 5.times { LeakyExt.leak(7) } } } # RUBY:thread
threads.each(&:join)

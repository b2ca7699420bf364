# A small Sinatra app for servers.test: each request keeps a 100-byte string
# (the last 2,000), and the answer has one length, as ab wants.
require 'sinatra/base'
class App < Sinatra::Base
  KEPT = []
  get '/' do
    KEPT << ("row " * 25) # KEPT
    KEPT.shift if KEPT.size > 2000
    format("hello %05d\n", KEPT.size)
  end
end
run App

# posts.rb's work as a program (memprof run measures it from outside).
require_relative 'posts'
$kept = work

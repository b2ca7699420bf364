# An ActiveRecord program on an in-memory SQLite database: 3000 posts
# written, then read back as models, 1000 of them kept (tests/ruby-groups.test).
require 'active_record'
ActiveRecord::Base.establish_connection(adapter: 'sqlite3', database: ':memory:')
ActiveRecord::Migration.verbose = false
ActiveRecord::Schema.define do
  create_table :posts do |t|
    t.string :title
    t.text :body
  end
end
class Post < ActiveRecord::Base; end
BODY = 'b' * 100
# Rows without models: the models are the work's alone.
Post.insert_all((1..3000).map { |i| { title: "post #{i}", body: BODY } })

# The work both profilers measure.
def work
  posts = Post.order(:id).to_a                  # WORK:load
  posts.select.with_index { |_, i| (i % 3).zero? }   # WORK:keep
end

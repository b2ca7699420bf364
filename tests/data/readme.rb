# The README's examples, run: every "$ COMMAND" line of its plain ``` blocks
# is run in one shell, in order, from a copy of the project's layout; the
# lines shown under it must appear in its output, in order. "..." stands for
# any lines; a line starting "... " for any line ending with the rest. Pids
# and the directories before a source file's name may differ.
#
#   ruby readme.rb README SANDBOX     (prints TAP lines; exit 0 when all pass)
readme, sandbox = ARGV
commands = []
in_block = false
plain = false
File.foreach(readme) do |line|
  line = line.chomp
  if line.start_with?("```")
    in_block = !in_block
    plain = in_block && line == "```"
    next
  end
  next unless in_block && plain
  if line.start_with?("$ ")
    commands << { cmd: line[2..], expect: [] }
  elsif commands.any?
    commands.last[:expect] << line
  end
end

script = commands.each_with_index.map do |c, i|
  "{ #{c[:cmd]}\n} > #{sandbox}/out.#{i} 2>&1; echo $? > #{sandbox}/rc.#{i}\n"
end.join
File.write(File.join(sandbox, "readme.sh"), "cd #{sandbox} || exit 1\n" + script)
system("sh", File.join(sandbox, "readme.sh"))

def normal(line)
  line.gsub(/pid \d+/, "pid N").gsub(%r{\S*/(?=[\w.-]+\.c:)}, "").split.join(" ")
end

failed = 0
commands.each_with_index do |c, i|
  out = File.read(File.join(sandbox, "out.#{i}")).lines.map { |l| normal(l) }
  rc = File.read(File.join(sandbox, "rc.#{i}")).to_i
  at = 0
  missing = nil
  c[:expect].each do |want|
    next if want.strip == "..."
    w = normal(want)
    found = if w.start_with?("... ")
              out[at..].index { |l| l.end_with?(w[4..]) }
            else
              out[at..].index(w)
            end
    if found.nil?
      missing = want
      break
    end
    at += found + 1
  end
  ok = rc == 0 && missing.nil?
  failed += 1 unless ok
  puts "#{ok ? 'ok' : 'not ok'} #{i + 1} - README: $ #{c[:cmd]}"
  puts "#   exit status #{rc}" if rc != 0
  if missing
    puts "#   missing: #{missing}"
    out.first(15).each { |l| puts "#   got: #{l}" }
  end
end
puts "1..#{commands.size}"
exit(failed.zero? && commands.size > 0 ? 0 : 1)

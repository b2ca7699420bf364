# memprof-gdb(7)'s COMMANDS section from memprof.gdbinit's `document` blocks:
# the man page says what `help` says. The helpers (memprof--*) are left out.
function roff(s) { gsub(/\\/, "\\e", s); gsub(/^[.']/, "\\\\\\&&", s); gsub(/-/, "\\-", s); return s }
/^document memprof-/ { name = $2; text = ""; lines = 0; inside = 1; next }
inside && /^end$/ {
    inside = 0
    if (name ~ /^memprof--/)
        next
    printf ".TP\n.B %s\n.nf\n%s.fi\n", roff(name), text
    next
}
inside {
    if (lines++ == 0)
        first = $0
    text = text roff($0) "\n"
}

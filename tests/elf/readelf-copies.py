# The copies of FUNCTION and the place of PARAMETER at each entry, as GNU
# readelf's own DWARF reader shows them (the outside oracle of
# inline-entries.test): one line per copy, "ENTRY own|inlined PLACE" in
# inline-entries-check's words. Location lists are looked up in readelf's
# dump of .debug_loc/.debug_loclists by the list's offset; an entry covers
# the entry pc when begin <= pc < end, or begin == end == pc (a view).
#
#   python3 readelf-copies.py FILE FUNCTION PARAMETER
import re, subprocess, sys

path, function, parameter = sys.argv[1:4]
regs = "rax rdx rcx rbx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15".split()
info = subprocess.run(["readelf", "--debug-dump=info", path], capture_output=True, text=True).stdout
loc = subprocess.run(["readelf", "--debug-dump=loc", path], capture_output=True, text=True).stdout

dies, die = [], None
for line in info.splitlines():
    m = re.match(r"\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)", line)
    if m:
        die = {"depth": int(m.group(1)), "off": int(m.group(2), 16), "tag": m.group(3), "attrs": {}}
        dies.append(die)
        continue
    m = re.match(r"\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*: (.*)", line)
    if m and die:
        die["attrs"][m.group(1)] = m.group(2).strip()

def ref(value):
    m = re.search(r"<0x([0-9a-f]+)>", value or "")
    return int(m.group(1), 16) if m else None

def name_of(d):
    n = d["attrs"].get("DW_AT_name")
    return n.split(": ")[-1] if n else None

def address(value):
    return int(re.findall(r"0x([0-9a-f]+)", value)[-1], 16)

by_off = {d["off"]: d for d in dies}
def named(d, want, hops=0):
    if name_of(d) is not None:
        return name_of(d) == want
    for a in ("DW_AT_abstract_origin", "DW_AT_specification"):
        r = ref(d["attrs"].get(a))
        if r in by_off and hops < 3:
            return named(by_off[r], want, hops + 1)
    return False

def loclist(offset, pc):
    lines = loc.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(r"\s+0*%x\s" % offset, l)), None)
    if start is None:
        return None
    text = []
    for l in lines[start:]:
        text.append(l)
        if "<End of list>" in l:
            break
    # "begin end (expr)" or "begin end expr", after a "views at ... for:" line or inline.
    for m in re.finditer(r"([0-9a-f]{16}) ([0-9a-f]{16}) \(?(DW_OP_[^\n]*)", "\n".join(text)):
        lo, hi, expr = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
        if lo <= pc < hi or lo == hi == pc:
            return expr
    return None

def place(expr):
    m = re.match(r"DW_OP_reg(\d+) ", expr)
    if m:
        return "reg %s" % m.group(1)
    m = re.match(r"DW_OP_fbreg: (-?\d+)", expr)
    if m:
        return "frame cfa + %s" % m.group(1)
    # A computation: readelf's "DW_OP_breg2 (rcx): 0; DW_OP_lit1; ...;
    # DW_OP_stack_value" as "expr value breg2 0, lit1, ..."
    ops = [op.strip() for op in expr.strip().rstrip(")").split(";") if op.strip()]
    value = ops[-1] == "DW_OP_stack_value"
    words = []
    for op in ops[:-1] if value else ops:
        m = re.match(r"DW_OP_(\w+)(?: \(\w+\))?(?::\s*(.*))?$", op)
        if not m:
            return "other " + expr
        name, operand = m.group(1), m.group(2)
        if operand is not None:
            operand = re.sub(r"\s*\(\w+\)\s*", " ", operand).strip()
        words.append(name + (" " + operand if operand else ""))
    m = re.match(r"(?:lit(\d+)|const\d?[us] (-?\d+))$", words[0]) if len(words) == 1 else None
    if value and m:   # memprof reads these as the constant they give
        return "const %s" % (m.group(1) or m.group(2))
    return "expr %s %s" % ("value" if value else "address", ", ".join(words))

for i, d in enumerate(dies):
    if d["tag"] not in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine") or not named(d, function):
        continue
    a = d["attrs"]
    if "DW_AT_entry_pc" in a:
        entry = address(a["DW_AT_entry_pc"])
    elif "DW_AT_low_pc" in a:
        entry = address(a["DW_AT_low_pc"])
    else:
        continue
    where = "unreadable"
    for c in dies[i + 1:]:
        if c["depth"] <= d["depth"]:
            break
        if c["depth"] == d["depth"] + 1 and c["tag"] == "DW_TAG_formal_parameter" and named(c, parameter):
            value = c["attrs"].get("DW_AT_location", "")
            if "location list" in value:
                expr = loclist(address(value.split()[0]), entry)
            else:
                m = re.search(r"\((DW_OP_.*)\)\s*$", value)
                expr = m.group(1) if m else None
            where = place(expr) if expr else "unreadable"
    print("%x %s %s" % (entry, "inlined" if d["tag"] == "DW_TAG_inlined_subroutine" else "own", where))

#!/bin/sh
# utf8.sh STEPTRACE ST_HOSTILE: a bundle whose kernel, range and op names,
# command line, host and device are not valid UTF-8 (st-hostile utf8), read
# from a file whose own name is not either: every output (chrome, perfetto,
# sqlite, the HTML report, both SVG charts, the JSON, CSV and text reports)
# is valid UTF-8 and shows each name as Python's decode(errors="replace")
# does, U+FFFD for each invalid part, the valid names as they are.
set -u
. "$(dirname "$0")/../lib/check.sh"
st=$1 hostile=$2
b="$tmp/bad$(printf '\377')name.stb"
"$hostile" utf8 "$b" || { echo "cannot make the bundle"; exit 1; }

run() {  # run NAME ARGS...: steptrace ARGS exits 0 with no error line
	name=$1; shift
	"$st" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" || { fail "$name: exit $?: $(cat "$tmp/$name.err")"; return; }
	! grep -q '^error' "$tmp/$name.err" || fail "$name: $(cat "$tmp/$name.err")"
}
run chrome export --format chrome "$b" -o "$tmp/t.json"
run perfetto export "$b" -o "$tmp/t.pftrace"
run sqlite export --format sqlite "$b" -o "$tmp/t.sqlite"
run report report "$b" -o "$tmp/t.html"
run memory memory "$b" --svg "$tmp/mem.svg"
run flops flops "$b" --svg "$tmp/roof.svg" --by op
run json summary "$b" --format json
run csv summary "$b" --format csv
run table summary "$b" --full-names
run ranges ranges "$b" --format json

python3 - "$tmp" "$(dirname "$0")/../hostile/hostile.c" <<'PY' || fail "the outputs (above)"
import json, re, sqlite3, sys
tmp, src = sys.argv[1], sys.argv[2]
# the names, as hostile.c's bad_utf8[] writes them
block = open(src, encoding="latin-1").read().split("bad_utf8[] = {")[1].split("};")[0]
names = [eval("b" + m) for m in re.findall(r'^\s*("(?:[^"\\]|\\.)*")', block, re.M)]
want = [n.decode("utf-8", "replace") for n in names]
assert len(want) == 6 and "\ufffd" in want[0] and "\ufffd" not in want[-1], want
cmd = b"python3 caf\xe9.py --tag \xff".decode("utf-8", "replace")
bundle = "bad\ufffdname.stb"
bad = 0
def check(what, ok, detail=""):
    global bad
    if not ok:
        print(f"FAIL: {what} {detail}")
        bad += 1
def section(what, body):
    try:
        body()
    except Exception as e:                   # a file missing or unreadable: the output failed
        check(what, False, f"{type(e).__name__}: {e}")
def text(name):
    data = open(f"{tmp}/{name}", "rb").read()
    try:
        return data.decode("utf-8")          # strict: any invalid byte fails
    except UnicodeDecodeError as e:
        check(f"{name} is not UTF-8:", False, str(e))
        return data.decode("utf-8", "replace")

def chrome():
    doc = json.loads(text("t.json"))
    slices = {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    for w in want:
        check("chrome: the slice", w in slices, repr(w))
    check("chrome: command_line", doc["otherData"].get("command_line") == cmd,
          repr(doc["otherData"].get("command_line")))
    check("chrome: bundle", doc["otherData"]["bundle"].endswith(bundle), repr(doc["otherData"]["bundle"]))
    gpu = [e["args"]["name"] for e in doc["traceEvents"]
           if e.get("ph") == "M" and e["args"].get("name", "").startswith("GPU")]
    check("chrome: the device's name cut between characters",
          gpu and all("\ufffd" not in g and "NVIDIA \u00e9\u00e9" in g for g in gpu), repr(gpu))

def perfetto():   # its strings are the same bytes
    pf = open(f"{tmp}/t.pftrace", "rb").read()
    for n, w in zip(names, want):
        check("perfetto: the name", w.encode() in pf, repr(w))
        if w.encode() != n:
            check("perfetto: the raw bytes", n not in pf, repr(n))

def sqlite():     # Python decodes TEXT strictly
    db = sqlite3.connect(f"{tmp}/t.sqlite")
    strings = {r[0] for r in db.execute("SELECT value FROM StringIds")}
    nvtx = {r[0] for r in db.execute("SELECT text FROM NVTX_EVENTS")}
    run = dict(db.execute("SELECT key, value FROM RUN"))
    for w in want:
        check("sqlite: StringIds", w in strings, repr(w))
        check("sqlite: NVTX_EVENTS.text", w in nvtx, repr(w))
        check("sqlite: an op's path", any(p.endswith(w) for p in strings), repr(w))
    check("sqlite: RUN command_line", run.get("command_line") == cmd, repr(run.get("command_line")))
    check("sqlite: RUN hostname", run.get("hostname") == "host\ufffd", repr(run.get("hostname")))
    check("sqlite: RUN bundle", run.get("bundle", "").endswith(bundle), repr(run.get("bundle")))

def page():
    html = text("t.html")
    for w in want:
        check("report: the name", w in html, repr(w))
    check("report: the command line", "caf\ufffd.py" in html)

def reports():
    for f in ("mem.svg", "roof.svg", "table.out"):
        text(f)
    csv = text("csv.out")
    everything = json.dumps(json.loads(text("json.out")), ensure_ascii=False)
    for w in want:
        check("csv: the name", w in csv, repr(w))
        check("json: the name", w in everything, repr(w))
    json.loads(text("ranges.out"))

for what, body in (("chrome", chrome), ("perfetto", perfetto), ("sqlite", sqlite), ("report", page),
                   ("reports", reports)):
    section(what, body)
sys.exit(1 if bad else 0)
PY
check_done export.utf8

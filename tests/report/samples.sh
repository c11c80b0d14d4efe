#!/bin/sh
# samples.sh STEPTRACE SOURCE_DIR: the HTML report of the shipped DDP
# recording (a PyTorch program's two ranks) as a reader takes it: rows that
# sum up the others ("mean", "share (%)", "... (total per step)") sit in the
# table's footer, out of its sorting; the run's card says what it knows of a
# program's header, never "no header"; and without -o, the default name
# replaces only a page steptrace wrote, saying so.
set -u
st=$1
src=$2
. "$src/tests/lib/check.sh"

r0=$src/samples/pytorch-ddp.rank0.stb
r1=$src/samples/pytorch-ddp.rank1.stb
"$st" report "$r0" "$r1" -o "$tmp/ddp.html" >"$tmp/out" 2>&1 || fail "report of the DDP ranks: $(cat "$tmp/out")"
python3 - "$tmp/ddp.html" <<'PY' || fail "summary rows in a sorted table body (line above)"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
label = re.compile(r"<tr[^>]*><td[^>]*>([^<]*)</td>")
summary = ("mean", "share (%)", "total")
seen = []
for table in re.findall(r"<table class=\"data sortable\".*?</table>", page, re.S):
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    foot = re.search(r"<tfoot>(.*?)</tfoot>", table, re.S)
    for first in label.findall(body):
        if first in summary or first.endswith("(total per step)"):
            sys.exit("'%s' is a row of a sorted body" % first)
    if foot:
        seen += label.findall(foot.group(1))
for want in ("mean", "share (%)", "allreduce (total per step)", "broadcast (total per step)"):
    if want not in seen:
        sys.exit("no footer row '%s' (footers: %s)" % (want, seen))
PY
grep -q 'no header' "$tmp/ddp.html" && fail "the DDP report says its bundle has no header"
grep -q "<dt>Run</dt><dd>a program&#39;s recording: no model configuration" "$tmp/ddp.html" ||
	fail "the DDP report's run card does not say it is a program's recording"
grep -q "<dt>Rank</dt><dd>0 of 2" "$tmp/ddp.html" || fail "the DDP report's run card does not name the rank"

# The default output (no -o): a file steptrace did not write is never replaced
mkdir "$tmp/cwd" && cd "$tmp/cwd" || exit 1
small=$src/samples/small-bf16-forward.stb
echo "my notes" > small-bf16-forward.html
"$st" report "$small" >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "report over a file it did not write: exit $rc, want 1"
[ "$(cat small-bf16-forward.html)" = "my notes" ] || fail "report replaced a file it did not write"
[ "$(cat "$tmp/out")" = "error: 'small-bf16-forward.html' exists and is not a report steptrace wrote: give -o to write elsewhere (-o 'small-bf16-forward.html' replaces it)" ] ||
	fail "report over a file it did not write: $(cat "$tmp/out")"
rm small-bf16-forward.html
"$st" report "$small" >"$tmp/out" 2>&1 || fail "report to its default name: $(cat "$tmp/out")"
grep -q "replacing" "$tmp/out" && fail "a first report says it replaced one: $(cat "$tmp/out")"
"$st" report "$small" >"$tmp/out" 2>&1 || fail "report over its own page: $(cat "$tmp/out")"
grep -q "^wrote 'small-bf16-forward.html' (.*, replacing the report steptrace wrote there before)" "$tmp/out" ||
	fail "report over its own page says nothing of it: $(cat "$tmp/out")"
# -o names the file: the user's word, as `>` is
echo "mine" > named.html
"$st" report "$small" -o named.html >"$tmp/out" 2>&1 || fail "report -o over a file: $(cat "$tmp/out")"
grep -q 'generator" content="steptrace report"' named.html || fail "report -o did not write named.html"

check_done report.samples

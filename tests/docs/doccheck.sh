#!/bin/sh
# doccheck.sh STEPTRACE REPO: scripts/doccheck.py on made-up pages. A quote
# that matches passes; a changed number, a missing line or a line too many
# fails; "..." stands for any lines; an unmarked transcript of another
# program is refused; --update rewrites a drifted quote and keeps its "...".
set -u
st=$1; repo=$2
dc="python3 $repo/scripts/doccheck.py --steptrace $st"
dir=$(mktemp -d /tmp/st-doccheck-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() {  # expect NAME STATUS: doccheck on $dir/NAME.md exits STATUS
	$dc "$dir/$1.md" > "$dir/$1.log" 2>&1
	rc=$?
	[ "$rc" = "$2" ] || { fail "$1: exit $rc, expected $2"; sed 's/^/  /' "$dir/$1.log"; }
}
bundle=samples/small-bf16-train.stb
out=$(cd "$repo" && "$st" summary $bundle --top 2 2>&1)

# the real output, quoted whole
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out"; echo '```'; } > "$dir/good.md"
expect good 0

# one digit changed in the middle
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed '5s/[0-9]/#/'; echo '```'; } > "$dir/digit.md"
expect digit 1
grep -q 'differs at its line 5' "$dir/digit.log" || fail "digit: the line is not named"

# a line left out, a line too many
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed '$d'; echo '```'; } > "$dir/short.md"
expect short 1
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out"; echo extra; echo '```'; } > "$dir/long.md"
expect long 1

# "..." for the rows in the middle; a quoted line that is not printed after it
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed -n 1,2p; echo '...';
  echo "$out" | tail -n 1; echo '```'; } > "$dir/elided.md"
expect elided 0
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed -n 1,2p; echo '...';
  echo 'not a line it prints'; echo '```'; } > "$dir/elided-bad.md"
expect elided-bad 1

# a transcript of another program: refused unless marked; marked, not run
printf '```\n$ cmake -S . -B build\n-- configured\n```\n' > "$dir/other.md"
expect other 2
printf '<!-- doccheck: gpu -->\n```\n$ steptrace record -o run.stb\nwhatever\n```\n' > "$dir/gpu.md"
expect gpu 0
printf '<!-- doccheck: skip -->\n```\n$ steptrace summary run.stb\nwhatever\n```\n' > "$dir/noreason.md"
expect noreason 2

# blocks of one page share a folder: a later block reads what an earlier wrote
{ echo '```'; echo "\$ steptrace export $bundle --format sqlite -o run.sqlite"; 
  (cd "$dir" && "$st" export "$repo/$bundle" --format sqlite -o "$dir/x.sqlite" 2>&1) | sed "s#$dir/x.sqlite#run.sqlite#";
  echo '```'; echo; echo '```'; echo '$ ls run.sqlite'; echo 'run.sqlite'; echo '```'; } > "$dir/shared.md"
expect shared 0
[ -e "$repo/run.sqlite" ] && [ "$repo/run.sqlite" -nt "$dir/shared.md" ] && fail "shared: wrote into the repository"

# an export and a cd hold for the commands after them, a here-document is the command's
printf '```\n$ export X=41\n$ mkdir -p d && cd d\n$ echo $X; pwd | sed "s#.*/##"\n41\nd\n$ cat <<EOF\nline\nEOF\nline\n```\n' > "$dir/state.md"
expect state 0

# --update: the drifted digit rewritten, the "..." kept, the page then passes
{ echo 'text before'; echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed -n 1,2p | sed '2s/[0-9]/#/';
  echo '...'; echo "$out" | tail -n 1; echo '```'; echo 'text after'; } > "$dir/update.md"
$dc --update "$dir/update.md" > "$dir/update.log" 2>&1 || fail "update: exit $?"
expect update 0
grep -qx '\.\.\.' "$dir/update.md" || fail "update: the '...' line is gone"
head -n 1 "$dir/update.md" | grep -qx 'text before' || fail "update: the text around the block changed"
tail -n 1 "$dir/update.md" | grep -qx 'text after' || fail "update: the text around the block changed"

# --update of a quote whose kept lines drifted (a number on a line before its one "..."): the
# merge cannot place them, so it keeps as many lines before and after the "..." and says so
{ echo '```'; echo "\$ steptrace summary $bundle --top 2"; echo "$out" | sed -n 1,5p | sed '5s/[0-9]/#/';
  echo '...'; echo "$out" | tail -n 1; echo '```'; } > "$dir/counts.md"
$dc --update "$dir/counts.md" > "$dir/counts.log" 2>&1 || fail "counts: exit $?"
grep -q "kept by the lines around it" "$dir/counts.log" || fail "counts: not said: $(cat "$dir/counts.log")"
expect counts 0
[ "$(grep -c '' "$dir/counts.md")" = 10 ] || fail "counts: $(grep -c '' "$dir/counts.md") lines, want 10"
sed -n 8p "$dir/counts.md" | grep -qx '\.\.\.' || fail "counts: the '...' moved"

echo "doccheck.sh: $fails failed"
[ "$fails" = 0 ]

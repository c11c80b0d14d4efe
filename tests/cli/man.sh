#!/bin/sh
# man.sh STEPTRACE MANPAGE VERSION: the man page (docs/steptrace.1) keeps up
# with the program: it carries the version, has an entry for every command
# `steptrace help` lists, and names in each analysis command's entry every
# long option that command's --help prints (in its entry, or under COMMON
# OPTIONS, which every analysis command shares). Where man(1) is installed,
# the page must also render without a warning.
set -u
st=$1
page=$2
version=$3
. "$(dirname "$0")/../lib/check.sh"

# The page as plain text: roff's \- as -, \fB..\fR and quotes gone.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/"//g' "$page" >"$tmp/page"

grep -q "^\.TH STEPTRACE 1 .* steptrace $version " "$tmp/page" ||
	fail "the .TH line does not say steptrace $version: $(grep '^\.TH' "$tmp/page")"

# entry CMD: the lines of CMD's entry, from its .B/.BI line to the next .TP or .SH
entry() {
	awk -v c="$1" '
		/^\.(TP|SH)/ { on = 0 }
		on { print }
		$1 ~ /^\.BI?$/ && $2 == c { on = 1 }
	' "$tmp/page"
}

sed -n '/^\.SH COMMON OPTIONS/,/^\.SH/p' "$tmp/page" >"$tmp/common"

"$st" help >"$tmp/help" || fail "steptrace help failed"
cmds=$(awk '/^   [a-z]/ { print $1 }' "$tmp/help" | grep -v -x -e help -e version)
[ -n "$cmds" ] || fail "steptrace help lists no command"
# the analysis commands, and trigger (no GPU either): each option their --help prints
analysis="$(sed -n '/^Analysis commands/,/^$/p' "$tmp/help" | awk '/^   [a-z]/ { print $1 }') trigger"
for c in $cmds; do
	entry "$c" >"$tmp/entry"
	if [ ! -s "$tmp/entry" ]; then
		fail "the man page has no entry for '$c'"
		continue
	fi
	case " $(echo $analysis) " in
	*" $c "*) ;;
	*) continue ;;
	esac
	"$st" "$c" --help >"$tmp/cmdhelp" || fail "steptrace $c --help failed"
	for o in $(grep -o -e '--\(\[no-\]\)\?[a-z][a-z-]*' "$tmp/cmdhelp" | sed 's/^--\(\[no-\]\)\?//' | sort -u); do
		[ "$o" = help ] && continue
		grep -q -e "--$o\\b" "$tmp/entry" "$tmp/common" || fail "the man page's '$c' entry does not name --$o"
	done
done

if command -v man >/dev/null 2>&1; then
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" >"$tmp/render" 2>"$tmp/warn"
	[ -s "$tmp/warn" ] && fail "man warns: $(head -n 3 "$tmp/warn")"
	grep -q 'steptrace - record a transformer' "$tmp/render" || fail "man renders no NAME line"
fi

check_done "cli.man (commands: $(echo $cmds))"

#!/bin/sh
# output.sh STEPTRACE GEN CASE: every command that writes a file (export,
# report, memory --svg, flops --svg) against one kind of target, through the
# program (lib/output.h has its own unit test):
#
#   files     a regular file (replaced, mode kept), a missing one, a pipe,
#             /dev/null, /dev/full (one error line, non-zero exit, the device
#             still there), "-", a symlink (written through, still a link),
#             a missing directory (flops --svg prints no table)
#   same      the output is the input bundle: directly, through a symlink,
#             through a hard link; refused with one line, the bundle intact
#   full      a full disk: a 64 KiB tmpfs (unshare), the target untouched and
#             no temporary file left; 77 where mounting is not permitted
#   readonly  a read-only directory (chmod, or a read-only tmpfs as root);
#             77 where neither can be had
#   stdout    every report with standard output on /dev/full: exit 1 and
#             one line, "cannot write to standard output: No space left..."
#   perms     a file the user could not write with '>' (mode 0444; as root,
#             another user's 0600 file too) is refused in one line, untouched
#   maxsize   --max-size on every file written: measured first, refused in
#             one line at half the size written, the target untouched and
#             no temporary left; written at twice it
set -u
. "$(dirname "$0")/../lib/check.sh"
st=$1 gen=$2 case=$3
b="$tmp/in.stb"
"$gen" basic -o "$b" || { echo "cannot make a bundle"; exit 1; }

# write CMD TARGET: runs CMD writing to TARGET; stdout in $tmp/out, stderr in $tmp/err
write() {
	c=$1 target=$2
	case $c in
	export) "$st" export "$b" -o "$target" ;;
	report) "$st" report "$b" -o "$target" ;;
	memory) "$st" memory "$b" --svg "$target" ;;
	flops) "$st" flops "$b" --svg "$target" ;;
	esac > "$tmp/out" 2> "$tmp/err"
}

# is_output FILE CMD: FILE holds what CMD writes (by its first bytes)
is_output() {
	case $2 in
	export) [ "$(od -An -tx1 -N1 "$1" | tr -d ' ')" = 0a ] ;;   # a Perfetto TracePacket
	report) [ "$(head -c 9 "$1")" = '<!DOCTYPE' ] ;;
	*) [ "$(head -c 4 "$1")" = '<svg' ] ;;
	esac
}

# unwarned FILE: FILE's lines but the warning every command prints about
# the bundle: st-gen's basic layout says it dropped 2 kernel records
unwarned() {
	grep -v "^warning: '.*': 2 kernel records were dropped while recording" "$1"
}

one_error() {  # one_error WHAT: exactly one line on stderr (the bundle's warning aside), an error
	[ "$(unwarned "$tmp/err" | wc -l)" = 1 ] && grep -q '^error: ' "$tmp/err" ||
		{ fail "$1: want one error line, got:"; cat "$tmp/err" >&2; }
}

no_temporaries() {  # no_temporaries DIR WHAT
	! ls -a "$1" | grep -q '\.tmp-' || fail "$2: a temporary file was left in $1"
}

files() {
	for c in export report memory flops; do
		d="$tmp/$c"
		mkdir -p "$d"
		# a regular file: replaced on success, its mode kept
		echo precious > "$d/old"
		chmod 640 "$d/old"
		write $c "$d/old" || fail "$c onto a regular file: exit $?"
		is_output "$d/old" $c || fail "$c did not replace the regular file"
		[ "$(stat -c %a "$d/old")" = 640 ] || fail "$c: the file's mode changed"
		grep -q "^wrote '$d/old'" "$tmp/err" || fail "$c: no 'wrote' line"
		# a missing file
		write $c "$d/new" || fail "$c onto a missing file: exit $?"
		is_output "$d/new" $c || fail "$c did not create the file"
		# a pipe: written in place, still a pipe
		mkfifo "$d/fifo"
		cat "$d/fifo" > "$d/from-fifo" &
		write $c "$d/fifo" || fail "$c into a pipe: exit $?"
		wait
		is_output "$d/from-fifo" $c || fail "$c: nothing came through the pipe"
		[ -p "$d/fifo" ] || fail "$c: the pipe is gone"
		# /dev/null
		write $c /dev/null || fail "$c into /dev/null: exit $?"
		[ -c /dev/null ] || fail "$c: /dev/null is gone"
		# /dev/full: one error, non-zero, the device still there
		if [ -c /dev/full ]; then
			write $c /dev/full && fail "$c into /dev/full exited 0"
			one_error "$c into /dev/full"
			grep -q "No space left on device" "$tmp/err" || fail "$c into /dev/full: $(cat "$tmp/err")"
			[ -c /dev/full ] || fail "$c REMOVED /dev/full"
		fi
		# "-": standard output (the chart alone for memory and flops)
		write $c - || fail "$c to '-': exit $?"
		is_output "$tmp/out" $c || fail "$c -: standard output does not start with the file"
		# a symlink: written through, the link stays a link
		echo precious > "$d/real"
		ln -s real "$d/link"
		write $c "$d/link" || fail "$c through a symlink: exit $?"
		[ -L "$d/link" ] && [ "$(readlink "$d/link")" = real ] || fail "$c replaced the symlink"
		is_output "$d/real" $c || fail "$c did not write through the symlink"
		# a directory that does not exist: one line, nothing on stdout
		write $c "$d/no/such/x" && fail "$c into a missing directory exited 0"
		one_error "$c into a missing directory"
		[ ! -s "$tmp/out" ] || fail "$c into a missing directory printed its report first"
		no_temporaries "$d" "$c"
	done
}

same() {
	ln -s in.stb "$tmp/sym.stb"
	ln "$b" "$tmp/hard.stb"
	cp "$b" "$tmp/orig.stb"
	for c in export report memory flops; do
		for t in "$b" "$tmp/sym.stb" "$tmp/hard.stb"; do
			write $c "$t" && fail "$c onto its input $t exited 0"
			one_error "$c onto its input $t"
			grep -q "is the same file as input" "$tmp/err" || fail "$c onto $t: $(cat "$tmp/err")"
			cmp -s "$b" "$tmp/orig.stb" || fail "$c onto $t CHANGED THE BUNDLE"
			cp "$tmp/orig.stb" "$b"
		done
	done
	[ -L "$tmp/sym.stb" ] || fail "the symlink to the bundle is gone"
	# diff and report read two bundles: either one is an input
	cp "$b" "$tmp/b.stb"
	"$st" report "$b" "$tmp/b.stb" -o "$tmp/b.stb" 2> "$tmp/err" && fail "report A B -o B exited 0"
	one_error "report A B -o B"
	no_temporaries "$tmp" same
}

full() {
	mnt="$tmp/mnt"
	mkdir "$mnt"
	# shellcheck disable=SC2016
	script='
		mount -t tmpfs -o size=64k steptrace-test "$1" || exit 77
		echo precious > "$1/target"
		dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null   # fills the disk
		shift
		"$@" -o "$mnt/target" 2> "$mnt.err"
		rc=$?
		cat "$mnt/target" > "$mnt.target"
		ls -a "$mnt" > "$mnt.ls"
		exit $rc'
	if ! unshare -rm true 2>/dev/null; then
		echo "skip: cannot mount a tmpfs here (unshare -rm not permitted)"
		exit 77
	fi
	for c in export report; do
		mnt=$mnt unshare -rm sh -c "$script" sh "$mnt" "$st" $c "$b"
		rc=$?
		[ $rc = 77 ] && { echo "skip: cannot mount a tmpfs here"; exit 77; }
		[ $rc != 0 ] || fail "$c onto a full disk exited 0"
		[ "$(unwarned "$mnt.err" | wc -l)" = 1 ] && grep -q "No space left on device" "$mnt.err" ||
			fail "$c onto a full disk: $(cat "$mnt.err")"
		[ "$(cat "$mnt.target")" = precious ] || fail "$c onto a full disk changed the target"
		! grep -q '\.tmp-' "$mnt.ls" || fail "$c onto a full disk left a temporary file"
	done
}

readonly_dir() {
	d="$tmp/ro"
	mkdir "$d"
	echo precious > "$d/target"
	chmod 555 "$d"
	if touch "$d/probe" 2>/dev/null; then
		# root: a read-only mount instead
		rm -f "$d/probe"
		chmod 755 "$d"
		unshare -rm true 2>/dev/null || { echo "skip: root, and no read-only mount"; exit 77; }
		for c in export report memory flops; do
			case $c in export|report) o=-o ;; *) o=--svg ;; esac
			unshare -rm sh -c 'mount -t tmpfs -o ro steptrace-test "$1" || exit 77; shift; "$@"' \
				sh "$d" "$st" $c "$b" $o "$d/target" > "$tmp/out" 2> "$tmp/err"
			rc=$?
			[ $rc = 77 ] && { echo "skip: cannot mount a tmpfs here"; exit 77; }
			[ $rc != 0 ] || fail "$c into a read-only directory exited 0"
			one_error "$c into a read-only directory"
			grep -q "Read-only file system" "$tmp/err" || fail "$c: $(cat "$tmp/err")"
		done
		return
	fi
	for c in export report memory flops; do
		write $c "$d/target" && fail "$c into a read-only directory exited 0"
		one_error "$c into a read-only directory"
		grep -q "Permission denied" "$tmp/err" || fail "$c: $(cat "$tmp/err")"
		[ "$(cat "$d/target")" = precious ] || fail "$c changed a file in a read-only directory"
	done
	chmod 755 "$d"
}

full_stdout() {
	[ -c /dev/full ] || { echo "skip: no /dev/full"; exit 77; }
	want="error: cannot write to standard output: No space left on device"
	for args in "info $b" "steps $b" "summary $b" "summary $b --format json" "ranges $b" \
		    "memory $b" "flops $b" "replay $b" "replay $b --format csv" "replay $b --capacity 1GiB" \
		    "diff $b $b" "export $b -o -" "memory $b --svg -" "help" "summary --help" "--version"; do
		# shellcheck disable=SC2086
		"$st" $args > /dev/full 2> "$tmp/all"
		rc=$?
		unwarned "$tmp/all" > "$tmp/err"
		[ $rc = 1 ] || fail "$args > /dev/full: exit $rc, want 1"
		case $args in
		export*) grep -q "No space left on device" "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 1 ] ||
			fail "$args > /dev/full: $(cat "$tmp/err")" ;;
		*) [ "$(cat "$tmp/err")" = "$want" ] || fail "$args > /dev/full said: $(cat "$tmp/err")" ;;
		esac
	done
}

# sized WHAT TARGET MAX: the command WHAT (export-perfetto, export-chrome,
# export-sqlite, report, memory, flops) writing TARGET with --max-size MAX
sized() {
	c=$1 target=$2 max=$3
	case $c in
	export-*) "$st" export "$b" --format "${c#export-}" -o "$target" --max-size "$max" ;;
	report) "$st" report "$b" -o "$target" --max-size "$max" ;;
	memory) "$st" memory "$b" --svg "$target" --max-size "$max" ;;
	flops) "$st" flops "$b" --svg "$target" --max-size "$max" ;;
	esac > "$tmp/out" 2> "$tmp/err"
}

maxsize() {
	d="$tmp/max"
	mkdir "$d"
	for c in export-perfetto export-chrome export-sqlite report memory flops; do
		sized $c "$d/whole" 0 || { fail "$c --max-size 0: exit $?"; cat "$tmp/err" >&2; continue; }
		size=$(wc -c < "$d/whole")
		echo precious > "$d/target"
		# the estimate is within a factor of 2 of what is written
		if sized $c "$d/target" $((size / 2)); then
			fail "$c --max-size $((size / 2)) wrote $size bytes"
		else
			one_error "$c --max-size $((size / 2))"
			grep -q "^error: '$d/target' would be about .* of .*, more than --max-size .*raise --max-size (0: no limit)$" \
				"$tmp/err" || fail "$c --max-size: $(cat "$tmp/err")"
			[ "$(cat "$d/target")" = precious ] || fail "$c --max-size changed the target"
			[ ! -s "$tmp/out" ] || [ $c = memory ] || [ $c = flops ] || fail "$c --max-size printed something"
		fi
		no_temporaries "$d" "$c --max-size"
		sized $c "$d/target" $((size * 2)) || fail "$c --max-size $((size * 2)): exit $?"
		[ "$(wc -c < "$d/target")" = "$size" ] || fail "$c --max-size $((size * 2)) did not write the same file"
		sized $c "$d/target" -1 && fail "$c --max-size -1 exited 0"
		rm -f "$d/whole" "$d/target"
	done
}

perms() {
	d="$tmp/perms"
	mkdir "$d"
	for c in export report memory flops; do
		for who in mine other; do
			echo precious > "$d/t"
			if [ $who = mine ]; then
				chmod 444 "$d/t"
				mode=0444
			else
				[ "$(id -u)" = 0 ] || continue   # another user's file: only root can make one here
				chown 65534:65534 "$d/t" && chmod 600 "$d/t" || { fail "cannot chown"; continue; }
				mode=0600
			fi
			write $c "$d/t" && fail "$c onto a $mode file ($who) exited 0"
			one_error "$c onto a $mode file ($who)"
			grep -q "^error: cannot write '$d/t': Permission denied (mode $mode, .*): steptrace replaces only a file you may write" \
				"$tmp/err" || fail "$c onto a $mode file ($who): $(cat "$tmp/err")"
			[ "$(cat "$d/t")" = precious ] || fail "$c REPLACED a $mode file ($who)"
			[ "$(stat -c %a "$d/t")" = ${mode#0} ] || fail "$c changed the mode of a $mode file"
			[ ! -s "$tmp/out" ] || [ $c = flops ] || [ $c = memory ] || fail "$c printed something"
			no_temporaries "$d" "$c onto a $mode file"
			rm -f "$d/t"
		done
		# through a symlink: the file it points to decides
		echo precious > "$d/real"
		chmod 444 "$d/real"
		ln -s real "$d/link"
		write $c "$d/link" && fail "$c through a symlink to a 0444 file exited 0"
		[ "$(cat "$d/real")" = precious ] || fail "$c replaced a 0444 file through a symlink"
		rm -f "$d/real" "$d/link"
	done
}

case $case in
perms) perms ;;
maxsize) maxsize ;;
files) files ;;
stdout) full_stdout ;;
same) same ;;
full) full ;;
readonly) readonly_dir ;;
*) echo "unknown case $case"; exit 2 ;;
esac
check_done "output.$case"

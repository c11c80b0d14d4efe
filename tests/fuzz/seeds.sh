#!/bin/sh
# seeds.sh ROOT OUT [FUZZ_SEED]: the seed corpora of the fuzzers from the
# bundles of the source tree ROOT. OUT/bundle holds the bundles of
# ROOT/samples and the archives inside them, OUT/member each of their
# members as fuzz_member.c reads one (a byte naming the member, then its
# bytes), OUT/commands the bundles of ROOT/samples, ROOT/docs/foreign and
# ROOT/docs/multi one by one, and as sets (fuzz_commands.c: a tar of .stb
# files) the ranks of each run of docs/multi and two such runs together.
# With FUZZ_SEED (tests/fuzz/seed.c), OUT/windows holds OUT/commands cut
# into windows of events that fuzz_commands runs in milliseconds.
set -eu
root=$1; out=$2; seed=${3:-}
mkdir -p "$out/bundle" "$out/member" "$out/commands" "$out/import"
# fuzz_import: the torch.profiler traces of tests/import/
for f in "$root"/tests/import/*.json "$root"/tests/import/*.json.gz "$root"/tests/import/real/*/*.json.gz; do
	[ -f "$f" ] && cp "$f" "$out/import/"
done
out=$(cd "$out" && pwd)
for f in "$root"/samples/*.stb; do
	b=$(basename "$f" .stb)
	cp "$f" "$out/bundle/$b.stb"
	zstd -qdc "$f" > "$out/bundle/$b.tar"
	i=0
	for m in header.pb strings-000000.pb events-000000.pb footer.pb; do
		{ printf "\\$(printf %03o $i)"; bsdtar -xOf "$f" "$m"; } > "$out/member/$b-$m"
		i=$((i + 1))
	done
done
cp "$root"/samples/*.stb "$root"/docs/foreign/*.stb "$root"/docs/multi/*.stb "$out/commands/"
# A set: the bundles given, as 0.stb, 1.stb, ... in a tar.
set_of() {
	name=$1; shift
	dir=$(mktemp -d "$out/set-XXXXXX")
	i=0
	for f in "$@"; do
		cp "$f" "$dir/$i.stb"
		i=$((i + 1))
	done
	(cd "$dir" && bsdtar --format ustar -cf "$out/commands/$name.tar" ./*.stb)
	rm -rf "$dir"
}
runs=""
for f in "$root"/docs/multi/*.rank0.stb; do
	run=$(basename "$f" .rank0.stb)
	set_of "$run" "$root/docs/multi/$run".rank*.stb
	runs="$runs $run"
done
set -- $runs
[ $# -ge 2 ] && set_of "$1-$2" "$root/docs/multi/$1".rank*.stb "$root/docs/multi/$2".rank*.stb
if [ -n "$seed" ]; then
	mkdir -p "$out/windows"
	"$seed" "$out/windows" "$out"/commands/*
fi
exit 0

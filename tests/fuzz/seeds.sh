#!/bin/sh
# seeds.sh SAMPLES OUT: the seed corpora of the fuzzers from the bundles in
# SAMPLES: OUT/bundle holds the bundles and the archives inside them,
# OUT/member each of their members as fuzz_member.c reads one (a byte naming
# the member, then its bytes).
set -eu
samples=$1; out=$2
mkdir -p "$out/bundle" "$out/member"
for f in "$samples"/*.stb; do
	b=$(basename "$f" .stb)
	cp "$f" "$out/bundle/$b.stb"
	zstd -qdc "$f" > "$out/bundle/$b.tar"
	i=0
	for m in header.pb strings-000000.pb events-000000.pb footer.pb; do
		{ printf "\\$(printf %03o $i)"; bsdtar -xOf "$f" "$m"; } > "$out/member/$b-$m"
		i=$((i + 1))
	done
done

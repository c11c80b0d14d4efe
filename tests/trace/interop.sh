#!/bin/sh
# Other tools read what steptrace writes: bsdtar lists a bundle, protoc
# decodes its members with nothing but proto/steptrace.proto.
set -eu
writer=$1; proto_dir=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$writer" --write "$tmp/x.stb"
bsdtar -tvf "$tmp/x.stb" > "$tmp/list"
for m in header.pb strings-000000.pb events-000000.pb footer.pb; do
  grep -q " $m\$" "$tmp/list" || { echo "bsdtar does not list $m"; cat "$tmp/list"; exit 1; }
done
(cd "$tmp" && bsdtar -xf x.stb)
protoc --decode=steptrace.EventChunk -I "$proto_dir" "$proto_dir/steptrace.proto" \
  < "$tmp/events-000000.pb" > "$tmp/chunk.txt"
n=$(grep -c '^events {' "$tmp/chunk.txt")
[ "$n" -gt 10 ] || { echo "protoc decoded only $n events"; exit 1; }
grep -q '^base_ns: ' "$tmp/chunk.txt" || { echo "no base_ns in decoded chunk"; exit 1; }
protoc --decode=steptrace.Header -I "$proto_dir" "$proto_dir/steptrace.proto" \
  < "$tmp/header.pb" | grep -q 'format_major: 1' || { echo "header does not decode"; exit 1; }
protoc --decode=steptrace.Footer -I "$proto_dir" "$proto_dir/steptrace.proto" \
  < "$tmp/footer.pb" | grep -q 'complete: true' || { echo "footer does not decode"; exit 1; }
echo "interop: bsdtar listed $(wc -l < "$tmp/list") members, protoc decoded $n events of chunk 0"

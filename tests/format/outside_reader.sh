#!/bin/sh
# outside_reader.sh STEPTRACE SOURCE_DIR: outside_reader.py with a python3
# that has python3-protobuf and python3-zstandard (CI's is Debian's).
set -u
for py in python3 /usr/bin/python3; do
	if "$py" -c 'import google.protobuf, zstandard' 2>/dev/null; then
		command -v protoc > /dev/null || { echo "skip: no protoc (Debian: protobuf-compiler)"; exit 77; }
		exec "$py" "$2/tests/format/outside_reader.py" "$1" "$2"
	fi
done
echo "skip: neither python3 nor /usr/bin/python3 imports google.protobuf and zstandard" \
     "(Debian: python3-protobuf python3-zstandard)"
exit 77

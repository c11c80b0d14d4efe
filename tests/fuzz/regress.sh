#!/bin/sh
# regress.sh BUNDLE_RUN MEMBER_RUN SAMPLES: each harness once over its seeds
# (from SAMPLES) and over every input fuzzing found (tests/fuzz/regress/),
# under the build's sanitizers: a crash or a sanitizer report fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/st-fuzz-regress-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sh "$here/seeds.sh" "$3" "$tmp"
"$1" "$tmp/bundle" "$here/regress/bundle" > /dev/null
"$2" "$tmp/member" "$here/regress/member" > /dev/null

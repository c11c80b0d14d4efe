#!/bin/sh
# regress.sh BUNDLE_RUN MEMBER_RUN COMMANDS_RUN FUZZ_SEED ROOT IMPORT_RUN: each harness
# once over its seeds (seeds.sh, from the source tree ROOT) and over every
# input fuzzing found (tests/fuzz/regress/), under the build's sanitizers,
# and fuzz_commands' mutator a few times over windows of the samples and of
# a run of two ranks: a crash, a sanitizer report or a finding of
# fuzz_commands' own fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/st-fuzz-regress-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sh "$here/seeds.sh" "$5" "$tmp" "$4"
export ST_FUZZ_SCRATCH="$tmp"
"$1" "$tmp/bundle" "$here/regress/bundle"
"$2" "$tmp/member" "$here/regress/member"
"$3" "$tmp/commands" "$here/regress/commands"
"$6" "$tmp/import" "$here/regress/import"
"$3" -mutate=20 "$tmp"/windows/small-*.0 "$tmp/windows/ddp-bucket.tar.0"

#!/usr/bin/env bash
# On the GPU machine: A/B of two builds (each a folder with lib/ and packs/, e.g.
# build-old and build, both carried) through bench/decode.py, alternated ROUNDS
# times in one call so that both see the same machine state. Extra arguments go
# to decode.py (e.g. --paged 16 --rounds 3 --points 1x8x2x16384,16x32x8x8192).
# Logs and tables go to OUT/ab_<build path, / as _>_<round>. AB_BUILDS="C D ...": more builds, each round
# after A and B (e.g. two kernel variants beside the build before them).
# usage: tools/ab_builds.sh OUT BUILD_A BUILD_B ROUNDS [decode.py args...]
set -u
out=${1:?usage: ab_builds.sh OUT BUILD_A BUILD_B ROUNDS [decode.py args...]}
a=${2:?build A}; b=${3:?build B}; rounds=${4:?rounds}
shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for build in "$a" "$b" ${AB_BUILDS:-}; do
    start=$SECONDS
    # the build's path, not its basename: old/build and build must not share a tag (and a folder)
    tag=$(printf '%s' "${build%/}" | tr '/' '_')_$r
    LD_LIBRARY_PATH=$PWD/$build/lib timeout 300 python3 bench/decode.py --lib "$build/lib/libingot.so" \
      --pack "$build/packs/attention_decode" --out "$out/ab_$tag" "$@" > "$out/ab_$tag.log" 2>&1
    echo "== $build round $r rc=$? $((SECONDS - start))s"
    grep -hE '^\| *([0-9]+|B=[^|]*) *\|' "$out/ab_$tag"/*.md 2>/dev/null || tail -n 5 "$out/ab_$tag.log"
  done
done

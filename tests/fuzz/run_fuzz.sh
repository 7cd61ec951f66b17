#!/bin/sh
# run_fuzz.sh HARNESS SEED_DIR SECONDS [--pack-seeds] [libFuzzer flags...]
# The bounded fuzz run of one harness (the CTest tests `fuzz_*`): copies the
# checked-in seed corpus into a temporary folder (and, with --pack-seeds, the
# seeds the harness writes from this build's pack), replays every seed, fuzzes
# for SECONDS with at most 2 GiB of memory, and fails on any crash, leak,
# timeout or out-of-memory. A failing input is kept under
# ${INGOT_FUZZ_ARTIFACTS:-./fuzz-artifacts}/ for the report and the corpus.
set -eu
bin=$1
seeds=$2
secs=$3
shift 3
pack_seeds=0
if [ "${1:-}" = "--pack-seeds" ]; then
  pack_seeds=1
  shift
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ingot_fuzz_XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$seeds" ]; then
  find "$seeds" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
fi
if [ "$pack_seeds" = 1 ]; then
  INGOT_FUZZ_WRITE_SEEDS="$work/corpus" "$bin"
fi
echo "run_fuzz: $(basename "$bin"): $(ls "$work/corpus" | wc -l) seeds, ${secs}s"
rc=0
"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" || rc=$?
if [ "$rc" != 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
  keep="${INGOT_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}/$(basename "$bin")"
  mkdir -p "$keep"
  cp "$work/artifacts/"* "$keep/" 2>/dev/null || true
  echo "run_fuzz: $(basename "$bin") FAILED (exit $rc); failing inputs kept in $keep" >&2
  exit 1
fi
echo "run_fuzz: $(basename "$bin"): no crash, leak, timeout or OOM in ${secs}s"

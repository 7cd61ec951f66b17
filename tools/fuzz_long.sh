#!/usr/bin/env bash
# fuzz_long.sh BUILD [SECONDS_PER_HARNESS] [JOBS]
# The long fuzz session of docs/RELIABILITY.md: runs every libFuzzer harness of
# a clang build (configured with -DCMAKE_C_COMPILER=clang-22) for SECONDS
# (default 600), JOBS harnesses at a time (default: the number of cores),
# each on a persistent corpus under BUILD/fuzz-long/corpus/<harness> that starts
# from tests/fuzz/corpus/<harness> and grows from run to run. Logs and failing
# inputs go to BUILD/fuzz-long/; the summary (executions, cov, ft, crashes,
# leaks per harness) is printed at the end and written to BUILD/fuzz-long/summary.txt.
# INGOT_FUZZ_HARNESSES="match dispatch_plan" runs only those.
# Exit status 1 when any harness found a crash, leak, timeout or OOM.
set -euo pipefail
build=${1:?usage: tools/fuzz_long.sh BUILD [SECONDS_PER_HARNESS] [JOBS]}
secs=${2:-600}
jobs=${3:-$(nproc)}
src="$(cd "$(dirname "$0")/.." && pwd)"
out="$build/fuzz-long"
read -r -a harnesses <<< "${INGOT_FUZZ_HARNESSES:-pack_open graph_json match dispatch_plan}"
for h in "${harnesses[@]}"; do
  [ -x "$build/bin/fuzz_$h" ] || { echo "fuzz_long: $build/bin/fuzz_$h missing (a clang-22 build: cmake -DCMAKE_C_COMPILER=clang-22, then cmake --build BUILD --target ingot_tests)" >&2; exit 2; }
done
mkdir -p "$out"

run_one() {
  local h=$1 corpus="$out/corpus/$1" art="$out/artifacts/$1/"
  mkdir -p "$corpus" "$art"
  find "$src/tests/fuzz/corpus/$h" -maxdepth 1 -type f -exec cp -n {} "$corpus/" \;
  if [ "$h" = pack_open ]; then INGOT_FUZZ_WRITE_SEEDS="$corpus" "$build/bin/fuzz_$h" > /dev/null; fi
  local rc=0
  "$build/bin/fuzz_$h" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$art" "$corpus" > "$out/$h.log" 2>&1 || rc=$?
  echo "$rc" > "$out/$h.rc"
}

echo "fuzz_long: ${#harnesses[@]} harnesses x ${secs}s, $jobs at a time; logs in $out"
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
{
  printf '%-14s %12s %8s %8s %8s %8s %6s\n' harness executions exec/s cov ft crashes leaks
  for h in "${harnesses[@]}"; do
    log="$out/$h.log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    crashes=$(find "$out/artifacts/$h" -type f -name 'crash-*' -o -type f -name 'timeout-*' -o -type f -name 'oom-*' | wc -l)
    leaks=$(find "$out/artifacts/$h" -type f -name 'leak-*' | wc -l)
    printf '%-14s %12s %8s %8s %8s %8s %6s\n' "$h" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$crashes" "$leaks"
    if [ "$(cat "$out/$h.rc")" != 0 ] || [ "$crashes" != 0 ] || [ "$leaks" != 0 ]; then failed=1; fi
  done
} | tee "$out/summary.txt"
exit "$failed"

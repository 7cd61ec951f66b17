#!/usr/bin/env bash
# run_all.sh BUILD_DIR [LOG_DIR] [PACK_DIR]
# Runs every GPU test binary of BUILD_DIR (bin/test_gpu_*), then
# compute-sanitizer memcheck and racecheck on tests 1-3 when compute-sanitizer
# is on PATH. One log per run in LOG_DIR (default: BUILD_DIR/gpu-logs); a
# summary last. Exit 0 only when nothing failed (skips, exit 77, are reported).
set -u
build=${1:?usage: run_all.sh BUILD_DIR [LOG_DIR] [PACK_DIR]}
logs=${2:-$build/gpu-logs}
pack=${3:-$build/packs/attention_decode}
# The test programs: build/bin (the project's output folder) or tests/gpu of the build.
bin=$build/bin
[ -x "$bin/test_gpu_tokens" ] || bin=$build/tests/gpu
mkdir -p "$logs"
declare -a summary=()
failed=0

run() { # name, command...
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$logs/$name.log" 2>&1
  local rc=$? took=$((SECONDS - start))
  local verdict=PASS
  if [ $rc -eq 77 ]; then verdict=SKIP; elif [ $rc -ne 0 ]; then verdict="FAIL(rc=$rc)"; failed=$((failed + 1)); fi
  local last; last=$(grep -E ': (PASS|FAIL|SKIP)' "$logs/$name.log" | tail -n 1)
  summary+=("$(printf '%-34s %-12s %4ss  %s' "$name" "$verdict" "$took" "${last:0:160}")")
}

tests=(test_gpu_tokens test_gpu_poison_tail test_gpu_capacity test_gpu_splits
       test_gpu_variants test_gpu_graph test_gpu_streams test_gpu_handoff test_gpu_models
       test_gpu_kv_append)
for t in "${tests[@]}"; do
  if [ -x "$bin/$t" ]; then run "$t" "$bin/$t" "$pack"
  else summary+=("$(printf '%-34s %s' "$t" "MISSING ($bin/$t)")"); failed=$((failed + 1)); fi
done

if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    for t in test_gpu_tokens test_gpu_poison_tail test_gpu_capacity; do
      [ -x "$bin/$t" ] || continue
      # --error-exitcode makes any finding fail the run even if the test's own checks pass.
      run "$tool-$t" compute-sanitizer --tool "$tool" --error-exitcode 86 \
          --print-limit 20 "$bin/$t" "$pack"
    done
  done
else
  summary+=("compute-sanitizer not on PATH: sanitizer runs skipped")
fi

echo "== GPU test summary ($(date -u +%FT%TZ), logs in $logs)"
printf '%s\n' "${summary[@]}"
echo "== $failed failed"
[ $failed -eq 0 ]

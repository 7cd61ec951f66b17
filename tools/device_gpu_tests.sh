#!/usr/bin/env bash
# Runs on the GPU machine, from the repo root, over a build/ made on the build
# machine by `make tests` (bin, lib, packs): every GPU test binary, ingot-inspect run on the
# example graphs, then (optional) a benchmark command. Logs go to $1.
set -u
out=${1:-results}  # usage: device_gpu_tests.sh [LOGDIR (default: results)] [sanitize]
mode=${2:-}
# Each step's line goes to stdout and to LOGDIR/summary.txt. INGOT_LOGS_TAR=FILE: after each step,
# LOGDIR is also packed into FILE (outside LOGDIR), so that a call cut off by a time limit, or one
# that brings back only a few files, still has every finished step's log.
mkdir -p "$out"
: > "$out/summary.txt"
say() {
  echo "$*"
  echo "$*" >> "$out/summary.txt"
  if [ -n "${INGOT_LOGS_TAR:-}" ]; then tar czf "$INGOT_LOGS_TAR.tmp" -C "$out" . && mv "$INGOT_LOGS_TAR.tmp" "$INGOT_LOGS_TAR"; fi
}
# INGOT_GPU_PART=1, 2 or 3: a third of the suite, each within one 600 s device call (the whole ran
# past 600 s on 2026-12-02): 1 the wait-order check, tokens, poison_tail, capacity, splits and
# variants; 2 graph, streams, handoff, models, ragged and kv_append; 3 wave64, the Python steps and
# ingot-inspect run. Unset: everything, in that order. INGOT_GPU_TESTS and INGOT_NO_PYTHON apply
# within a part; the sanitize mode's steps run only without one.
part=${INGOT_GPU_PART:-}
part1_tests="tokens poison_tail capacity splits variants"
part2_tests="graph streams handoff models ragged kv_append"
case "$part" in
  "") tests_default="$part1_tests $part2_tests" ;;
  1) tests_default=$part1_tests ;;
  2) tests_default=$part2_tests ;;
  3) tests_default="" ;;
  *) echo "device_gpu_tests: INGOT_GPU_PART=$part (allowed: 1, 2, 3 or unset)" >&2; exit 2 ;;
esac
in_part() { [ -z "$part" ] || [ "$part" = "$1" ]; }
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pack=build/packs/attention_decode
fails=0
# The test programs are target ingot_tests, not part of `make`'s build: without the ones this
# call runs, its steps would fail for a reason that is not the code's.
missing=""
for t in ${INGOT_GPU_TESTS-$tests_default} $(in_part 3 && echo wave64); do
  [ -x build/bin/test_gpu_$t ] || missing="$missing test_gpu_$t"
done
# part 3 also runs ingot-inspect on the example graphs (and the wave64 test its self-test cubin)
if in_part 3; then
  [ -d build/packs/attention_decode_w64 ] || missing="$missing packs/attention_decode_w64"
  for f in ingot-inspect test_gpu_wave64_selftest.cubin; do [ -e build/bin/$f ] || missing="$missing $f"; done
fi
if [ -n "$missing" ]; then
  say "device_gpu_tests: build/ lacks$missing: build them with \`make tests\` on the build machine and send build/ again"
  exit 2
fi
# Static: no kernel loads global memory before its grid dependency wait.
if in_part 1; then
  python3 tools/check_wait_order.py $pack > $out/wait_order.log 2>&1
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && fails=$((fails + 1))
  say "check_wait_order rc=$rc :: $(tail -n 1 $out/wait_order.log | cut -c1-200)"
fi
# INGOT_GPU_TESTS: the tests to run (unset: all of them, in this order; empty: none, for a call that
# runs only the wave64, Python and inspect steps below).
for t in ${INGOT_GPU_TESTS-$tests_default}; do
  start=$SECONDS
  timeout 300 build/bin/test_gpu_$t $pack > $out/gpu_$t.log 2>&1
  rc=$?
  [ $rc -ne 0 ] && fails=$((fails + 1))
  say "test_gpu_$t rc=$rc $((SECONDS - start))s :: $(tail -n 2 $out/gpu_$t.log | tr '\n' ' ' | cut -c1-300)"
done
# The AMD kernels' wave64 code on an emulated 64-lane wave (issue 26): its own pack.
if in_part 3; then
  start=$SECONDS
  timeout 300 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 $pack \
    build/bin/test_gpu_wave64_selftest.cubin > $out/gpu_wave64.log 2>&1
  rc=$?
  [ $rc -ne 0 ] && fails=$((fails + 1))
  say "test_gpu_wave64 rc=$rc $((SECONDS - start))s :: $(tail -n 2 $out/gpu_wave64.log | tr '\n' ' ' | cut -c1-300)"
fi
# The Python API on the GPU (issue 25). The README's quick start as written, from a wheel of this tree
# installed into a folder of its own and run from outside the tree; then test_torch_api's GPU part
# (decode and DecodePlan against a reference, two streams, a captured torch.cuda graph).
if in_part 3 && [ -z "${INGOT_NO_PYTHON:-}" ]; then
  start=$SECONDS
  py=$(mktemp -d)
  python3 -c 'import re, sys; print(re.search(r"<!-- quickstart[^>]*-->\n```python\n(.*?)```", open("README.md").read(), re.S).group(1))' \
    > $py/quickstart.py
  (INGOT_BUILD_DIR=$PWD/build timeout 300 python3 -m pip install --no-index --no-build-isolation --no-deps \
     --target $py/site . && cd $py && PYTHONPATH=$py/site timeout 120 python3 quickstart.py) > $out/python_quickstart.log 2>&1
  rc=$?
  err=$(sed -n 's/^max abs error vs SDPA: //p' $out/python_quickstart.log)
  { [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(0 if float('${err:-nan}') < 0.02 else 1)"; } || { rc=1; fails=$((fails + 1)); }
  say "python quick start rc=$rc $((SECONDS - start))s :: max abs error vs SDPA ${err:-none}"
  start=$SECONDS
  INGOT_LIBRARY=$PWD/build/lib/libingot.so INGOT_PACKS=$PWD/$pack timeout 300 python3 tests/python/test_torch_api.py \
    > $out/python_torch_api.log 2>&1
  rc=$?
  [ $rc -ne 0 ] && fails=$((fails + 1))
  say "python test_torch_api rc=$rc $((SECONDS - start))s :: $(tail -n 3 $out/python_torch_api.log | tr '\n' ' ' | cut -c1-200)"
  rm -rf $py
fi
for g in $(in_part 3 && echo examples/graphs/*.json); do
  # A graph that no kernel admits (a decline example) must decline in `run` too.
  want=0
  build/bin/ingot-inspect match $g $pack > /dev/null 2>&1 || want=1
  timeout 120 build/bin/ingot-inspect run $g $pack > $out/inspect_$(basename $g .json).log 2>&1
  rc=$?
  [ $rc -ne $want ] && fails=$((fails + 1))
  say "inspect run $(basename $g) rc=$rc (expected $want) :: $(tail -n 1 $out/inspect_$(basename $g .json).log | cut -c1-200)"
done
if [ "$mode" = sanitize ] && [ -z "$part" ]; then
  for tool in memcheck racecheck; do
    for t in tokens poison_tail capacity ragged; do  # ragged: the balanced split (issue 23)
      start=$SECONDS
      INGOT_RAGGED_QUICK=1 timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
        build/bin/test_gpu_$t $pack > $out/${tool}_$t.log 2>&1
      rc=$?
      [ $rc -ne 0 ] && fails=$((fails + 1))
      say "$tool test_gpu_$t rc=$rc $((SECONDS - start))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $out/${tool}_$t.log | tail -n 1)"
    done
  done
fi
if [ "$mode" = sanitize ] && [ -z "$part" ]; then
  # The emulated wave's exchange slots and named barriers: shared-memory races and barrier misuse,
  # on the self-test and one paged kernel of the wave64 pack.
  for tool in racecheck synccheck; do
    start=$SECONDS
    INGOT_WAVE64_ONLY=bf16_d128_g4_sq1_paged timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool \
      --error-exitcode 86 --print-limit 20 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 $pack \
      build/bin/test_gpu_wave64_selftest.cubin > $out/${tool}_wave64.log 2>&1
    rc=$?
    [ $rc -ne 0 ] && fails=$((fails + 1))
    say "$tool test_gpu_wave64 rc=$rc $((SECONDS - start))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $out/${tool}_wave64.log | tail -n 1)"
  done
fi
say "device_gpu_tests: $fails failed"

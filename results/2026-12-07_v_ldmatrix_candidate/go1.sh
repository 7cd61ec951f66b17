#!/bin/bash
# Main (build-ab/old.tar.xz, ae4f2af) against this build (build-ab/new.tar.xz: f39fa7c, V through ldmatrix), and the
# GPU tests that run every changed kernel; logs under $OUT/r1.tgz after each step.
#   default (about 560 s): the seed and batched points, the model rows whose kernels changed, then
#     test_gpu_variants, models, graph, tokens, poison_tail and streams, then wave64 and the inspect runs;
#   SHORT=1 (about 280 s, for little device time): test_gpu_variants first, then fewer model rows and points.
# LIMIT: the seconds this script may take (default 590, SHORT 280); each step gets what is left.
set -u
T0=$SECONDS
short=${SHORT:-0}
limit=${LIMIT:-$([ "$short" = 1 ] && echo 280 || echo 590)}
res=/tmp/r1; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-ab/old && tar xJf build-ab/old.tar.xz -C build-ab/old
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
left() { echo $((limit - (SECONDS - T0))); }
step() { echo "$1 [$((SECONDS - T0))s]"; tar czf $OUT/r1.tgz -C /tmp r1; }
# tests PART TESTS: tools/device_gpu_tests.sh on this build (PART empty: every part's steps)
tests() {
  INGOT_LOGS_TAR=$OUT/tests.tgz INGOT_GPU_PART=$1 INGOT_GPU_TESTS=$2 INGOT_NO_PYTHON=1 timeout $(left) tools/device_gpu_tests.sh $res/tests > $res/tests.txt 2>&1
  echo "gpu rc=$?"; cat $res/tests/summary.txt; step tests
}
# ab NAME ARGS...: main against this build through bench/decode.py (two rounds within one)
ab() {
  local name=$1; shift
  timeout $(left) tools/ab_builds.sh $res/$name build-ab/old/build build 1 "$@" --rounds 2 --no-read-floor > $res/$name.txt 2>&1
  step $name; grep "^==" $res/$name.txt
}
if [ "$short" = 1 ]; then
  tests 1 variants
  ab models --models --model Phi --model StarCoder --model Falcon --model Gemma-2
  ab points --points 1x8x2x8192,1x8x2x65536,4x8x2x8192,16x32x8x8192
else
  ab points --points 1x8x2x4096,1x8x2x8192,1x8x2x65536,4x8x2x8192,16x32x8x8192
  ab models --models --model Phi --model StarCoder --model Falcon --model Gemma-2 --model 405B --model Llama-3-8B \
    --model Qwen2-0.5B
  tests "" "variants models graph tokens poison_tail streams"
fi

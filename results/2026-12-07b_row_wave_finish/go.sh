#!/bin/bash
# Decision 0045 on build-ab/new.tar.xz (the AMD row-wave matrix-core kernels finish from their
# registers; sm_90 objects byte-identical to main's): the racecheck probe of 2026-12-07, the GPU
# suite's part 3 (the emulated wave64 pack, where the changed kernels run; the inspect runs), racecheck
# and synccheck on a changed kernel's twin, then (STEP=m) the H200 model table.
#   STEP=a: probe, part 3, sanitizers (about 300 s);  STEP=m: a StarCoder A/B (build-ab/w3.tar.xz), then
#   bench/decode.py --models until LIMIT s (default 560) have passed. STEP=r, p: racecheck probes (below);
#   STEP=h: the model table, 3 rounds, on an H200 only. STEP=g: decision 0047's part 3 and a Phi A/B;
#   STEP=g1: the same with test_gpu_wave64 on the group-1 kernels only.
# Logs in $OUT; summaries printed.
set -u
T0=$SECONDS
STEP=${STEP:-a}
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu_$STEP.txt
export LD_LIBRARY_PATH=$PWD/build/lib
case $STEP in
  a)
    for m in 0 1 2 3; do
      compute-sanitizer --tool racecheck --print-limit 4 build-ab/racecheck_probe $m > $OUT/probe_$m.log 2>&1
      echo "probe mode $m rc=$? :: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/probe_$m.log | tail -n 1)"
    done
    tar czf $OUT/probe.tgz -C $OUT $(cd $OUT && ls probe_*.log) && rm -f $OUT/probe_*.log
    INGOT_NO_PYTHON=1 INGOT_GPU_PART=3 INGOT_LOGS_TAR=$OUT/gpu_p3.tgz tools/device_gpu_tests.sh /tmp/p3 > /tmp/p3.txt 2>&1
    echo "part 3 rc=$? [$((SECONDS - T0))s]"; cat /tmp/p3/summary.txt | cut -c1-400
    for tool in racecheck synccheck; do
      INGOT_WAVE64_ONLY=bf16_d128_g32_sq1_paged timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 \
        --print-limit 20 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 build/packs/attention_decode \
        build/bin/test_gpu_wave64_selftest.cubin > $OUT/${tool}_d128g32.log 2>&1
      echo "$tool wave64 d128 g32 paged rc=$? [$((SECONDS - T0))s] :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_d128g32.log | tail -n 1) $(tail -n 1 $OUT/${tool}_d128g32.log)"
    done ;;
  m)
    # First an experiment: StarCoder (48/1) at head dim 128 on sm_90 in one 48-row block of 3 row
    # waves (build-ab/w3.tar.xz: decode_mq with waves 3, group 48) against the shipped 64-row block.
    mkdir -p build-w3 && tar xJf build-ab/w3.tar.xz -C build-w3
    timeout 240 tools/ab_builds.sh $OUT/sc build build-w3 2 --models --model StarCoder --rounds 2 --no-read-floor \
      > $OUT/sc.txt 2>&1
    echo "starcoder a/b rc=$? [$((SECONDS - T0))s]"; cat $OUT/sc.txt
    tar czf $OUT/sc.tgz -C $OUT sc sc.txt && rm -rf $OUT/sc
    mkdir -p $OUT/models
    timeout $(( ${LIMIT:-560} - (SECONDS - T0) )) python3 -u bench/decode.py --lib build/lib/libingot.so --pack build/packs/attention_decode \
      --models --rounds 2 --no-read-floor --out $OUT/models > $OUT/models/models.log 2>&1
    echo "models rc=$? [$((SECONDS - T0))s]"; tail -n 40 $OUT/models/models.log ;;
  r)
    # The racecheck probe's modes 4 and 5 (the wide merge's pattern, with and without wave 0's
    # exchanges), and the emulated merge's SASS around the offsets racecheck named (0x12c0-0x15b0).
    for m in 4 5 1; do
      compute-sanitizer --tool racecheck --print-limit 4 build-ab/racecheck_probe $m > $OUT/probe_$m.log 2>&1
      echo "probe mode $m rc=$? :: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/probe_$m.log | tail -n 1)"
    done
    f=build/packs/attention_decode_w64/code/sm_90_w64/attention_decode_w64_bf16_d128_g32_sq1_paged_w2t16_tcrw.sm_90_w64.cubin
    cuobjdump -sass -fun attention_decode_w64_bf16_d128_g32_sq1_paged_w2t16_tcrw_merge $f > $OUT/merge.sass 2>&1 ||
      nvdisasm $f > $OUT/merge.sass 2>&1
    echo "sass rc=$? lines $(wc -l < $OUT/merge.sass)"
    grep -nE "BAR|/\*1[2-5][0-9a-f]0\*/" $OUT/merge.sass | grep -E "BAR|STS|LDS" | head -60
    # On an H200, the model table as well.
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      mkdir -p $OUT/models
      timeout 300 python3 -u bench/decode.py --lib build/lib/libingot.so --pack build/packs/attention_decode \
        --models --rounds 2 --no-read-floor --out $OUT/models > $OUT/models/models.log 2>&1
      echo "models rc=$? [$((SECONDS - T0))s]"; grep -E "^model|StarCoder|Phi|Qwen2-0.5B" $OUT/models/models.log
    fi ;;
  p)
    # racecheck on two emulated kernels whose merges (and, for d128 g4, split) it reported, with the
    # runtime's programmatic dependent launches off (INGOT_CUDA_PDL=0) and on.
    for k in bf16_d128_g32_sq1_paged bf16_d128_g4_sq1_paged; do
      for pdl in 0 1; do
        INGOT_CUDA_PDL=$pdl INGOT_WAVE64_ONLY=$k timeout 150 compute-sanitizer --tool racecheck --print-limit 6 \
          build/bin/test_gpu_wave64 build/packs/attention_decode_w64 build/packs/attention_decode \
          build/bin/test_gpu_wave64_selftest.cubin > $OUT/racecheck_${k}_pdl$pdl.log 2>&1
        echo "racecheck $k PDL=$pdl rc=$? [$((SECONDS - T0))s] :: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck_${k}_pdl$pdl.log | tail -n 1) $(grep -c 'Race reported' $OUT/racecheck_${k}_pdl$pdl.log) reports; $(grep -oE '_(split|merge|balanced_split|balanced_merge)\+' $OUT/racecheck_${k}_pdl$pdl.log | sort | uniq -c | tr '\n' ' ')"
      done
    done ;;
  h)
    # The model table, on an H200 only (an H100's is in h100/models/).
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      mkdir -p $OUT/models
      timeout ${LIMIT:-400} python3 -u bench/decode.py --lib build/lib/libingot.so --pack build/packs/attention_decode \
        --models --rounds ${ROUNDS:-3} --no-read-floor --out $OUT/models > $OUT/models/models.log 2>&1
      echo "models rc=$? [$((SECONDS - T0))s]"; tail -n 75 $OUT/models/models.log
    else
      echo "not an H200: no model table"
    fi ;;
  g)
    # Decision 0047: the GPU suite's part 3 on the emulated pack with the AMD group-1 kernels of head
    # dims 80-192; then an experiment: Phi-2 and Phi-3-mini (32/32) on sm_90 group-1 tensor-core
    # kernels (build-ab/phi.tar.xz, tools/candidate_pack.sh) against the shipped 8-row ones.
    INGOT_NO_PYTHON=1 INGOT_GPU_PART=3 INGOT_LOGS_TAR=$OUT/gpu_g3.tgz tools/device_gpu_tests.sh /tmp/g3 > /tmp/g3.txt 2>&1
    echo "part 3 rc=$? [$((SECONDS - T0))s]"; cut -c1-400 /tmp/g3/summary.txt
    tar xJf build-ab/phi.tar.xz
    timeout 200 tools/ab_builds.sh $OUT/phi build build-phi 2 --models --model Phi --rounds 2 --no-read-floor \
      > $OUT/phi.txt 2>&1
    echo "phi a/b rc=$? [$((SECONDS - T0))s]"; cat $OUT/phi.txt
    tar czf $OUT/phi.tgz -C $OUT phi phi.txt && rm -rf $OUT/phi ;;
  g1)
    # The short form of g: test_gpu_wave64 on the group-1 kernels only (the new ones of head dims
    # 80-192 and those of 64, 128 and 256; the rest of the emulated pack is the bytes STEP=a ran),
    # then the Phi A/B.
    INGOT_WAVE64_ONLY=_g1_sq1_ timeout 200 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 \
      build/packs/attention_decode build/bin/test_gpu_wave64_selftest.cubin > $OUT/gpu_wave64_g1.log 2>&1
    echo "test_gpu_wave64 (_g1_sq1_) rc=$? [$((SECONDS - T0))s] :: $(tail -n 2 $OUT/gpu_wave64_g1.log | tr '\n' ' ' | cut -c1-400)"
    tar xJf build-ab/phi.tar.xz
    timeout 150 tools/ab_builds.sh $OUT/phi build build-phi 2 --models --model Phi --rounds 2 --no-read-floor \
      > $OUT/phi.txt 2>&1
    echo "phi a/b rc=$? [$((SECONDS - T0))s]"; cat $OUT/phi.txt
    tar czf $OUT/phi.tgz -C $OUT phi phi.txt && rm -rf $OUT/phi ;;
esac

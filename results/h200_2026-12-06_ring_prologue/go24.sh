#!/bin/bash
# A/B of the ring prologue not unrolled (decision 0039) against main at 32943ba (nm.tar.xz), one call:
# seed and ring-kernel points contiguous and paged 16, the ragged tables contiguous and paged 16;
# then ncu of the paged B=4 splits on the new build (no_inst). ~300 s.
set -u
T0=$SECONDS
mkdir -p old && tar xJf build-ab/nm.tar.xz -C old
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/nm.tar.xz build/bin  # the tests are 32943ba's (unchanged)
res=/tmp/r24; mkdir -p $res
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt
P=1x8x2x4096,1x8x2x65536,4x8x2x8192,8x16x1x8192,1x64x1x16384
tools/ab_builds.sh $res/pts old/build build 1 --points $P --rounds 2 --no-read-floor > $res/pts.txt 2>&1
echo "points [$((SECONDS - T0))s]"; cat $res/pts.txt
tools/ab_builds.sh $res/p16 old/build build 1 --points $P --paged 16 --rounds 2 > $res/p16.txt 2>&1
echo "paged points [$((SECONDS - T0))s]"; cat $res/p16.txt
tar czf $OUT/r24.tgz -C /tmp r24
tools/ab_builds.sh $res/rag old/build build 1 --ragged --rounds 3 > $res/rag.txt 2>&1
tools/ab_builds.sh $res/ragp old/build build 1 --ragged --paged 16 --rounds 3 > $res/ragp.txt 2>&1
echo "ragged [$((SECONDS - T0))s]"; cat $res/rag.txt $res/ragp.txt
tar czf $OUT/r24.tgz -C /tmp r24
export LD_LIBRARY_PATH=$PWD/build/lib
for bal in 1 0; do
  n=b4_p16_bal$bal
  ncu --clock-control none --kernel-name regex:"split$" --launch-skip 2 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --section SpeedOfLight \
      -o $res/$n -f python3 bench/ncu_probe.py 8192 --heads 8x2 --lens 8192,8192,8192,8192 --balance $bal --paged 16 > $res/$n.log 2>&1
  ncu -i $res/$n.ncu-rep --page details --csv > $res/$n.details.csv 2>&1
  ncu -i $res/$n.ncu-rep --page source --csv --print-source sass > $res/$n.source.csv 2>&1
  rm -f $res/$n.ncu-rep
done
echo "ncu [$((SECONDS - T0))s]"
tar czf $OUT/r24.tgz -C /tmp r24

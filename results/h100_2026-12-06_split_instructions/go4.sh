#!/bin/bash
# Decision 0040 on an H200: main (build-m0) against the final build, seed and batched points
# (two alternated rounds) and the multi-query models. ~180 s.
set -u
T0=$SECONDS
res=/tmp/r4; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-m0 && tar xJf build-ab/m0.tar.xz -C build-m0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
tools/ab_builds.sh $res/pts build-m0/build build 2 --points 1x8x2x4096,1x8x2x65536,4x8x2x8192,16x32x8x8192 --rounds 2 --no-read-floor > $res/pts.txt 2>&1
echo "points [$((SECONDS - T0))s]"; grep -v "^| B=" $res/pts.txt
tar czf $OUT/r4.tgz -C /tmp r4
tools/ab_builds.sh $res/mq build-m0/build build 1 --models --model Falcon --model StarCoder --rounds 2 --no-read-floor > $res/mq.txt 2>&1
echo "models [$((SECONDS - T0))s]"
tar czf $OUT/r4.tgz -C /tmp r4

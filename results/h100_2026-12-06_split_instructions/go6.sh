#!/bin/bash
# Decision 0040 and the ragged batches (issue 23): main (build-m0) against the final build,
# bench/decode.py --ragged contiguous and paged 16, one call. ~60 s.
set -u
res=/tmp/r6; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-m0 && tar xJf build-ab/m0.tar.xz -C build-m0
nvidia-smi --query-gpu=name --format=csv > $res/gpu.txt
tools/ab_builds.sh $res/rag build-m0/build build 1 --ragged --rounds 3 > $res/rag.txt 2>&1
tools/ab_builds.sh $res/ragp build-m0/build build 1 --ragged --paged 16 --rounds 3 > $res/ragp.txt 2>&1
cat $res/rag.txt $res/ragp.txt
tar czf $OUT/r6.tgz -C /tmp r6

#!/bin/bash
# StarCoder's row-wave kernel (d128 g64 w4t32 tcs4rw, 212 registers, two workgroups an SM) against
# occupancy 3 (168 registers + 16 bytes of spill; with 3 stages, the same), candidate packs of the
# final templates, one call. ~70 s.
set -u
res=/tmp/r5; mkdir -p $res
tar xJf build-ab/s.tar.xz
nvidia-smi --query-gpu=name --format=csv > $res/gpu.txt
AB_BUILDS=build-s33 tools/ab_builds.sh $res/s build-s0 build-s3 1 --points 32x48x1x8192,32x48x1x65536,8x48x1x65536 --rounds 3 --no-read-floor > $res/s.txt 2>&1
grep -v "^| B=" $res/s.txt
tar czf $OUT/r5.tgz -C /tmp r5

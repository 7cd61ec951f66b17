#!/bin/bash
# The model table (bench/decode.py --models, 2 rounds) on this build; stops itself before the call's limit.
set -u
T0=$SECONDS
mkdir -p $OUT/models
tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
LD_LIBRARY_PATH=build/lib timeout ${LIMIT:-560} python3 -u bench/decode.py --lib build/lib/libingot.so \
  --pack build/packs/attention_decode --models --rounds 2 --no-read-floor --out $OUT/models > $OUT/models/models.log 2>&1
echo "models rc=$? [$((SECONDS - T0))s]"; cat $OUT/models/models.log | tail -80

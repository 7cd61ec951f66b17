#!/usr/bin/env bash
# A/B candidates on the build machine: a pack named attention_decode (the main config's
# header and split policy, so libingot's compiled dispatch stub plans it) holding only the
# given variants, bf16, sm_90, each admitted from its own capacity bound, packaged into
# OUT/packs/attention_decode next to a copy of LIB (OUT/lib). Carry OUT to the GPU machine
# and run bench/decode.py --lib OUT/lib/libingot.so --pack OUT/packs/attention_decode there
# (or tools/ab_builds.sh against the shipped build/).
# usage: tools/candidate_pack.sh OUT LIBDIR 'NAME|GROUP|HEAD_DIM|HEADS|KNOBS|LAYOUTS|CAPACITY_LO[;...]'
#   HEADS: a list of (Hq, Hkv) pairs, or `groups [[LO, HI]]` for the groups a row tile admits
#   (the multi-query row-wave kernels: `groups [[17, 65535]]`)
#   e.g. tools/candidate_pack.sh build-w4s4 build/lib \
#          'mid|4|128|[[8, 2], [32, 8]]|{math: auto, waves: 4, stages: 4}|contiguous|64'
set -euo pipefail
out=${1:?usage: candidate_pack.sh OUT LIBDIR SPEC}; lib=${2:?lib dir}; spec=${3:?variant spec}
root=$(cd "$(dirname "$0")/.." && pwd)
py=${INGOT_PYTHON:-/usr/bin/python3}
nvcc=${INGOT_NVCC:-/usr/local/cuda/bin/nvcc}
readelf=${INGOT_READELF:-llvm-readelf-22}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" - "$root/configs/attention_decode.yaml" "$work/attention_decode.yaml" "$spec" <<'PY'
import sys
src_path, cfg, spec = sys.argv[1:]
src = open(src_path, encoding="utf-8").read()
out = src[:src.index("\nvariants:")] + "\nvariants:\n"
for v in spec.split(";"):
    name, group, hd, heads, knobs, layouts, lo = v.split("|")
    pages = "page_sizes: [16, 32, 64, 128], " if "paged" in layouts else ""
    heads = f"groups: {heads[len('groups'):].strip()}" if heads.startswith("groups") else f"heads: {heads}"
    out += (f"  - name: {name}\n    priority: 1\n    archs: [sm_90]\n    knobs: {knobs}\n"
            f"    axes: {{dtype: [bf16], head_dim: [{hd}], group: [{group}], kv_layout: [{layouts}]}}\n"
            f"    admit: {{{heads}, batch: [1, 64], capacity: [{lo}, 1048576], {pages}"
            f"masks: [none, causal], lse: true}}\n")
open(cfg, "w", encoding="utf-8").write(out)
PY
PYTHONPATH="$root/generator" INGOT_TEMPLATE_DIR="$root/templates" "$py" -m ingot generate --quiet --out "$work/gen" "$work/attention_decode.yaml"
mkdir -p "$work/obj/sm_90"
for f in "$work"/gen/attention_decode/kernels/sm_90/*.hip; do
  b=$(basename "$f" .hip)
  "$nvcc" -x cu -std=c++17 -cubin -arch=sm_90 -O3 ${INGOT_NVCC_FLAGS:-} -I "$root/templates" -o "$work/obj/sm_90/$b.sm_90.cubin" "$f"
done
rm -rf "$out/packs/attention_decode"
PYTHONPATH="$root/generator" "$py" -m ingot package --quiet --generated "$work/gen/attention_decode" \
  --objects "$work/obj" --out "$out/packs/attention_decode" --archs sm_90 --readelf "$readelf"
mkdir -p "$out/lib" && cp -a "$lib/." "$out/lib/"
PYTHONPATH="$root/generator" "$py" -m ingot census "$out/packs/attention_decode"

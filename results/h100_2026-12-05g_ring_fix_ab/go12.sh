#!/bin/bash
# Device call 1 (written 2026-12-05c for the next session): main (45616d3.., the rings on 128-byte
# lines, decision 0037; build-ab/new.tar.xz) against 231cdce (build-ab/old.tar.xz), and two
# experiments beside them (z16, compact; not on main). SASS of every sm_90 entry point old against
# new; ragged A/B contiguous (2 rounds) and paged 16 (1 round); per-kernel times; test_gpu_ragged,
# memcheck, racecheck on main's build. Then build-ab/go6.sh and go7.sh: the rest of the GPU suite.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/new.tar.xz
mkdir -p build-ab/x && tar xJf build-ab/old.tar.xz -C build-ab/x
# experiments beside main (not on main): z16 = libingot with the balanced merge depth Z = B up to
# B = 16 (main's packs); compact = lib + packs whose balanced merge takes the compact merge for an
# entry of at most 16 pieces in a wide grid
[ -f build-ab/z16.tar.xz ] && tar xJf build-ab/z16.tar.xz -C build-ab/x && ln -sfn $PWD/build/packs build-ab/x/z16/packs
[ -f build-ab/compact.tar.xz ] && tar xJf build-ab/compact.tar.xz -C build-ab/x
EXP=""; for e in z16 compact; do [ -d build-ab/x/$e/lib ] && EXP="$EXP build-ab/x/$e"; done
res=/tmp/r12; mkdir -p $res
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv > $res/gpu.txt
say() { echo "$*"; echo "$*" >> $res/summary.txt; cp $res/summary.txt $OUT/; }
say "extract $((SECONDS - T0))s; $(tail -1 $res/gpu.txt)"
python3 - > $res/sass_diff.txt 2>&1 <<'PY'
import glob, os, re, subprocess
def funcs(path):
    out = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True).stdout
    d, name = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            name = m.group(1); d[name] = []
        elif name and re.match(r"\s+/\*[0-9a-f]{4}\*/", line):
            d[name].append(re.sub(r"/\*[0-9a-f]{4}\*/|/\* 0x[0-9a-f]+ \*/", "", line).strip())
    return d
same, diff = 0, []
for old in sorted(glob.glob("build-ab/x/old/packs/attention_decode/code/sm_90/*.cubin")):
    new = "build/packs/attention_decode/code/sm_90/" + os.path.basename(old)
    a, b = funcs(old), funcs(new)
    for f in sorted(set(a) | set(b)):
        if a.get(f) == b.get(f): same += 1
        else: diff.append(f)
print(f"sm_90 entry points: {same} with identical SASS, {len(diff)} changed")
kinds = {}
for f in diff:
    k = f.rsplit("_", 2); kinds.setdefault("balanced_split" if f.endswith("balanced_split") else f.split("_")[-1], []).append(f)
for k, v in kinds.items(): print(f"  changed {k}: {len(v)}: " + " ".join(x.replace("attention_decode_", "") for x in v))
PY
say "$(head -3 $res/sass_diff.txt)"; cp $res/sass_diff.txt $OUT/
export PYTHONUNBUFFERED=1
AB_BUILDS="$EXP" tools/ab_builds.sh $res/ab build-ab/x/old build 2 --ragged --rounds 3 --no-read-floor > $res/ab.txt 2>&1
say "ab contiguous done $((SECONDS - T0))s"
python3 build-ab/ab_table.py $res/ab > $res/ab_table.txt; cp $res/ab_table.txt $OUT/
tools/ab_builds.sh $res/abp build-ab/x/old build 1 --ragged --paged 16 --rounds 3 --no-read-floor > $res/abp.txt 2>&1
say "ab paged 16 done $((SECONDS - T0))s"
python3 build-ab/ab_table.py $res/abp > $res/abp_table.txt; cp $res/abp_table.txt $OUT/
PROF_SET=2 PROF_ENVS=1,0 python3 build-ab/prof.py 2>&1 | grep -v -i warn > $res/prof.txt; cp $res/prof.txt $OUT/
for e in $EXP; do PROF_SET=2 PROF_ENVS=1 python3 build-ab/prof.py $e/lib/libingot.so $e/packs/attention_decode 2>&1 | grep -v -i warn > $res/prof_$(basename $e).txt; cp $res/prof_$(basename $e).txt $OUT/; done
say "prof done $((SECONDS - T0))s"
tar czf $OUT/r12.tgz -C /tmp r12
INGOT_GPU_TESTS="ragged" INGOT_GPU_PART=2 tools/device_gpu_tests.sh $res/gpu | tail -2 >> $res/summary.txt
say "ragged done $((SECONDS - T0))s"
for tool in memcheck racecheck; do
  s=$SECONDS
  INGOT_RAGGED_QUICK=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
    build/bin/test_gpu_ragged build/packs/attention_decode > $res/${tool}_ragged.log 2>&1
  say "$tool test_gpu_ragged rc=$? $((SECONDS - s))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $res/${tool}_ragged.log | tail -n 1)"
done
say "total $((SECONDS - T0))s"
tar czf $OUT/r12.tgz -C /tmp r12

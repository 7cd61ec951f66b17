#!/bin/bash
# One device call (2026-12-05h): the A/B, then the whole GPU suite in parallel. build = compact merge objects + libingot with the
# balanced units cut for the spare slots (the candidate, cm.tar.xz); main = c13dd20 (new.tar.xz);
# cmo = main's libingot + the compact objects; fit = the compact objects + a libingot cutting the
# units without the B / 2 bound (experiment, fit.patch). SASS diff main/build; ragged A/B contiguous
# (2 rounds: main, build, cmo, fit) and paged 16 (1 round: main, build); per-kernel times.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/cm.tar.xz
mkdir -p build-ab/x && (cd build-ab/x && tar xJf ../new.tar.xz && rm -rf main && mv build main)
ln -sfn $PWD/build/packs build-ab/fit/packs
mkdir -p build-ab/x/cmo && ln -sfn $PWD/build-ab/x/main/lib build-ab/x/cmo/lib && ln -sfn $PWD/build/packs build-ab/x/cmo/packs
res=/tmp/r13; mkdir -p $res
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
for old in sorted(glob.glob("build-ab/x/main/packs/attention_decode/code/sm_90/*.cubin")):
    new = "build/packs/attention_decode/code/sm_90/" + os.path.basename(old)
    a, b = funcs(old), funcs(new)
    for f in sorted(set(a) | set(b)):
        if a.get(f) == b.get(f): same += 1
        else: diff.append(f)
print(f"sm_90 entry points: {same} with identical SASS, {len(diff)} changed")
kinds = {}
for f in diff:
    kinds.setdefault("balanced_merge" if f.endswith("balanced_merge") else f.rsplit("_", 1)[-1], []).append(f)
for k, v in kinds.items(): print(f"  changed {k}: {len(v)}")
PY
say "$(head -4 $res/sass_diff.txt)"; cp $res/sass_diff.txt $OUT/
export PYTHONUNBUFFERED=1
AB_BUILDS="build-ab/x/cmo" tools/ab_builds.sh $res/ab build-ab/x/main build 1 --ragged --rounds 3 --no-read-floor > $res/ab.txt 2>&1
say "ab contiguous done $((SECONDS - T0))s"
python3 build-ab/ab_table.py $res/ab > $res/ab_table.txt; cp $res/ab_table.txt $OUT/
PROF_SET=2 PROF_ENVS=1,0 python3 build-ab/prof.py build-ab/x/main/lib/libingot.so build-ab/x/main/packs/attention_decode 2>&1 | grep -v -i warn > $res/prof_main.txt; cp $res/prof_main.txt $OUT/
PROF_SET=2 PROF_ENVS=1 python3 build-ab/prof.py 2>&1 | grep -v -i warn > $res/prof.txt; cp $res/prof.txt $OUT/
say "prof done $((SECONDS - T0))s"
tar czf $OUT/r13.tgz -C /tmp r13
res=/tmp/r14; mkdir -p $res
INGOT_GPU_PART=1 INGOT_GPU_TESTS="variants" tools/device_gpu_tests.sh $res/a > $res/a.txt 2>&1 &
INGOT_GPU_PART=1 INGOT_GPU_TESTS="capacity splits tokens poison_tail" tools/device_gpu_tests.sh $res/b > $res/b.txt 2>&1 &
INGOT_GPU_PART=2 INGOT_GPU_TESTS="graph streams handoff" tools/device_gpu_tests.sh $res/c > $res/c.txt 2>&1 &
INGOT_GPU_PART=2 INGOT_GPU_TESTS="models kv_append" tools/device_gpu_tests.sh $res/d > $res/d.txt 2>&1 &
INGOT_GPU_PART=3 tools/device_gpu_tests.sh $res/e > $res/e.txt 2>&1 &
(mkdir -p $res/g; for tool in memcheck racecheck; do
  s=$SECONDS
  INGOT_RAGGED_QUICK=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
    build/bin/test_gpu_ragged build/packs/attention_decode > $res/g/${tool}_ragged.log 2>&1
  echo "$tool test_gpu_ragged rc=$? $((SECONDS - s))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $res/g/${tool}_ragged.log | tail -n 1)" >> $res/g/summary.txt
done) &
INGOT_GPU_PART=2 INGOT_GPU_TESTS="ragged" tools/device_gpu_tests.sh $res/f > $res/f.txt 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ]; do
  sleep 10
  cat $res/?/summary.txt > $OUT/summary14.txt 2>/dev/null
  tar czf $OUT/r14.tgz -C /tmp r14 2>/dev/null
done
cat $res/?/summary.txt > $OUT/summary14.txt
echo "total $((SECONDS - T0))s" >> $OUT/summary14.txt
tar czf $OUT/r14.tgz -C /tmp r14
cat $OUT/summary14.txt | cut -c1-250

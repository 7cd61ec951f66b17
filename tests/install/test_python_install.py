"""The Python install as README.md gives it: `pip install --no-index SOURCE` in a
venv of Debian's python3 (--system-site-packages: jinja2, yaml and torch from
apt), with no network; then the installed `ingot` and `ingot-inspect` commands,
`import ingot` without torch, the runtime and packs found inside the install,
the README's quick start (as written where torch sees a GPU; on a host context,
its tensors planned, where torch is there without one), `ingot build` of the
provider's config opened by ingot-inspect and the Python API; and the same
`pip install` with another python3 first on PATH (pyenv's, which lacks
bdist_wheel), into a target folder. Exits 77 where Debian's python3 cannot make
a venv (python3-venv missing).

usage: test_python_install.py SOURCE BUILD_DIR WORK"""

import json
import os
import re
import shutil
import subprocess
import sys

SOURCE, BUILD, WORK = (os.path.abspath(a) for a in sys.argv[1:4]) if len(sys.argv) == 4 else (None,) * 3
GRAPH = {"q": {"dtype": "bf16", "dims": [1, 16, 1, 128]}, "k": {"dtype": "bf16", "dims": [1, 4096, 8, 128]},
         "v": {"dtype": "bf16", "dims": [1, 4096, 8, 128]}, "o": {"dtype": "bf16", "dims": [1, 16, 1, 128]},
         "seq_lens": {"dtype": "int32", "dims": [1], "memory": "device"}, "kv_layout": "contiguous",
         "capacity": 4096, "mask": "none", "scale": 0.08838834764831845}
failures = []


def env_of(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGOT_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def run(cmd, cwd=None, ok=True, **extra):
    r = subprocess.run(cmd, cwd=cwd or WORK, env=env_of(**extra), capture_output=True, text=True, timeout=900)
    print(f"$ {' '.join(cmd)}  -> {r.returncode}")
    if ok and r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def expect(cond, what):
    print(("ok: " if cond else "FAILED: ") + what)
    if not cond:
        failures.append(what)


def quickstart():
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- quickstart[^>]*-->\n```python\n(.*?)```", text, re.S)
    if not m:
        sys.exit("FAILED: README.md has no quick start block (<!-- quickstart --> then ```python)")
    return m.group(1)


def main():
    if SOURCE is None:
        sys.exit(__doc__)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    venv = os.path.join(WORK, "venv")
    r = subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], capture_output=True,
                       text=True)
    if r.returncode != 0:
        print(f"python3 -m venv failed (apt-get install python3-venv): skipped\n{r.stderr}")
        return 77
    py, bin_ = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin")
    before = sorted(os.listdir(os.path.join(SOURCE, "generator")))
    run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", SOURCE], INGOT_BUILD_DIR=BUILD)
    expect(sorted(os.listdir(os.path.join(SOURCE, "generator"))) == before,
           "pip install left nothing in the source tree's generator/ (no egg-info)")

    # the commands
    r = run([os.path.join(bin_, "ingot"), "--version"])
    expect(r.stdout.strip() == "ingot 0.1.0", "ingot --version")
    r = run([os.path.join(bin_, "ingot"), "generate"], ok=False)
    expect(r.returncode == 2 and "no config given" in r.stderr, "installed `ingot generate` without a config: exit 2")
    gen = os.path.join(WORK, "gen")
    os.makedirs(gen)
    config = os.path.join(SOURCE, "examples", "provider", "provider_decode.yaml")
    run([os.path.join(bin_, "ingot"), "generate", "--quiet", config], cwd=gen)
    expect(os.path.isfile(os.path.join(gen, "provider_decode", "dispatch", "provider_decode_dispatch.c")),
           "installed `ingot generate` renders the templates into the current folder")
    code = ("import sys, ingot\nassert 'torch' not in sys.modules\nfrom ingot import paths\n"
            "print(paths.installed(), paths.library().startswith(sys.prefix))\n"
            "ctx = ingot.Runtime().context('none', arch='gfx942')\n"
            "for p in paths.pack_dirs(): ctx.open_pack(p)\nprint(ctx.kernel_count)\n"
            "print(paths.pack_dirs()[0])\n")
    r = run([py, "-c", code])
    lines = r.stdout.split("\n")
    expect(lines[0] == "True True", "the installed package finds its own libingot")
    expect(lines[1].isdigit() and int(lines[1]) > 0, "the shipped packs open on a host context")
    r = run([os.path.join(bin_, "ingot-inspect"), "census", lines[2]])
    expect("all packs verified" in r.stdout, "installed ingot-inspect census of the shipped pack")

    # the README's quick start
    qs = quickstart()
    has_torch = run([py, "-c", "import torch"], ok=False).returncode == 0
    gpu = has_torch and run([py, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                            ok=False).returncode == 0
    if gpu:
        r = run([py, "-c", qs])
        m = re.search(r"max abs error vs SDPA: ([0-9.e+-]+)", r.stdout)
        expect(m is not None and float(m.group(1)) < 0.02, f"the quick start on the GPU: {r.stdout.strip()}")
    elif has_torch:
        # On a host context: the quick start's tensors (on the CPU), planned as the GPU would; the SDPA check
        # needs the GPU run.
        head = qs.split("o = ingot.decode")[0].replace('device="cuda"', 'device="cpu"')
        host = head + ("ctx = ingot.Runtime().context('none', arch='sm_90')\n"
                       "[ctx.open_pack(p) for p in ingot.paths.pack_dirs()]\n"
                       "plan = ingot.DecodePlan(q, k, v, seq_lens, context=ctx)\nprint(plan.kernel)\n")
        r = run([py, "-c", host])
        expect(r.stdout.startswith("attention_decode_bf16_d128_g4_sq1_contig"),
               f"the quick start's shapes plan on a host context: {r.stdout.strip()}")
    else:
        print("torch is not installed: the quick start's torch part is not run here")

    # ingot build of the provider's config, opened by the installed ingot-inspect and the API
    out = os.path.join(WORK, "packs")
    r = run([os.path.join(bin_, "ingot"), "build", config, "--out", out, "--archs", "gfx942"],
            INGOT_NVCC="/nonexistent/nvcc")
    expect("provider_decode: 1 instances x gfx942" in r.stdout, "installed `ingot build`")
    graph = os.path.join(WORK, "graph.json")
    with open(graph, "w") as f:
        json.dump(GRAPH, f)
    r = run([os.path.join(bin_, "ingot-inspect"), "match", graph, os.path.join(out, "provider_decode"),
             "--arch", "gfx942"])
    expect("kernel: provider_decode_bf16_d128_g2_sq1_contig_w4t16" in r.stdout, "ingot-inspect opens the pack")
    r = run([py, "-c", "import ingot\nctx = ingot.Runtime().context('none', arch='gfx942')\n"
             "[ctx.open_pack(p) for p in ingot.paths.pack_dirs()]\nprint(ctx.kernel_count)"], INGOT_PACKS=out)
    expect(r.stdout.strip() == "1", "the Python API opens the pack (INGOT_PACKS)")

    # another python3 first on PATH (pyenv's): the backend needs no bdist_wheel
    other = shutil.which("python3")
    if other and os.path.realpath(other) != os.path.realpath("/usr/bin/python3"):
        target = os.path.join(WORK, "other-target")
        run([other, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir", "--target", target,
             SOURCE], INGOT_BUILD_DIR=BUILD)
        r = run([other, "-c", "import ingot.paths as p; print(p.installed())"], PYTHONPATH=target)
        expect(r.stdout.strip() == "True", f"pip install with {other} first on PATH")
    else:
        print("no python3 other than /usr/bin/python3 on PATH: the pyenv case is not run here")

    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The wave64 test pack's packaged descriptors against schemas/ (issue 26): the
generator emits arch sm_90_w64 like any other, so the schemas must admit it.

    wave64_pack_schema.py PACK_DIR"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "generator"))

from descriptor_checks import load_descriptor_dir, schema_errors  # noqa: E402
from gen_support import load_schemas  # noqa: E402


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: wave64_pack_schema.py PACK_DIR\n")
        return 2
    docs = load_descriptor_dir(argv[1])
    errors = schema_errors(docs, load_schemas())
    for e in errors[:20]:
        print(f"FAIL: {e}")
    kdps = [d for n, d in docs.items() if n.endswith(".kdp.json")]
    archs = sorted({a for d in kdps for kd in d.get("kernelDescriptors", [])
                    for a in kd.get("kernel_source", {}).get("objects", {})})
    ok = not errors and len(kdps) == 1 and archs == ["sm_90_w64"]
    print(f"wave64_pack_schema: {'PASS' if ok else 'FAIL'}: {len(docs)} descriptors, {len(errors)} schema errors, "
          f"code objects for {', '.join(archs) or 'nothing'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""docs/reference/pack-config.md lists every key the pack config schema accepts,
and nothing else, so the reference cannot drift from the generator.

The schema is walked from the generator itself (config._schema over the family's
axes, knobs, admit and split maps); the reference's keys are the backticked first
cells of its tables. A key path: `a.b` is key b of mapping a, `a[]` an item of
list a (the notation the reference explains)."""

import os
import re
import unittest

from ingot import config, schema
from ingot.families import FAMILIES

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REFERENCE = os.path.join(REPO, "docs", "reference", "pack-config.md")


def schema_keys(node, prefix=""):
    """Every key path below node: a Map's keys (and below them), a List's items."""
    out = set()
    if isinstance(node, schema.Map):
        for name, (child, _required, _default) in node.fields.items():
            path = f"{prefix}.{name}" if prefix else name
            out.add(path)
            out |= schema_keys(child, path)
    elif isinstance(node, schema.List):
        out |= schema_keys(node.item, prefix + "[]")
    return out


def reference_keys(text, family=None):
    """The first cell of every table row, when it is one backticked key path:
    of the shared sections, and of the sections whose heading says
    "(family `<family>`)" (every family's when family is None)."""
    keys = set()
    section = None  # the family of the section the line is in; None: shared
    for line in text.splitlines():
        if line.startswith("#"):
            h = re.search(r"\(family `([a-z_]+)`\)", line)
            section = h.group(1) if h else None
            continue
        m = re.match(r"\|\s*`([A-Za-z_][A-Za-z0-9_.\[\]]*)`\s*\|", line)
        if m and (family is None or section is None or section == family):
            keys.add(m.group(1))
    return keys


class ConfigReferenceTest(unittest.TestCase):
    def setUp(self):
        with open(REFERENCE, encoding="utf-8") as f:
            self.text = f.read()

    def test_every_family_schema_is_documented_exactly(self):
        self.assertGreater(len(reference_keys(self.text)), 40, "the reference's tables were not found")
        for name, family in sorted(FAMILIES.items()):
            documented = reference_keys(self.text, name)
            accepted = schema_keys(config._schema(family))
            with self.subTest(family=name):
                self.assertEqual(sorted(accepted - documented), [],
                                 f"keys the {name} schema accepts but {REFERENCE} does not list")
                self.assertEqual(sorted(documented - accepted), [],
                                 f"keys {REFERENCE} lists but the {name} schema does not accept")

    def test_walk_finds_nested_keys(self):
        # The walk itself: a nested map in a list, and a map in a map.
        node = schema.Map({"a": (schema.List(schema.Map({"b": (schema.Int(), True, None)})), True, None),
                           "c": (schema.Map({"d": (schema.Str(), False, "")}), False, {})})
        self.assertEqual(schema_keys(node), {"a", "a[].b", "c", "c.d"})

    def test_reference_parser_reads_first_cells_only(self):
        text = "| `x.y` | integer | `z` |\n| key | type |\n|---|---|\n| `p[].q` | list |\nnot `a.table`\n"
        self.assertEqual(reference_keys(text), {"x.y", "p[].q"})

    def test_family_sections_belong_to_their_family(self):
        text = "| `a` | x |\n## K (family `one`)\n| `b` | x |\n### L\n| `c` | x |\n## M (family `two`)\n| `d` |\n"
        self.assertEqual(reference_keys(text, "one"), {"a", "b", "c"})
        self.assertEqual(reference_keys(text, "two"), {"a", "c", "d"})
        self.assertEqual(reference_keys(text), {"a", "b", "c", "d"})


if __name__ == "__main__":
    unittest.main()

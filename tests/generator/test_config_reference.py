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


def reference_keys(text):
    """The first cell of every table row, when it is one backticked key path."""
    keys = set()
    for line in text.splitlines():
        m = re.match(r"\|\s*`([A-Za-z_][A-Za-z0-9_.\[\]]*)`\s*\|", line)
        if m:
            keys.add(m.group(1))
    return keys


class ConfigReferenceTest(unittest.TestCase):
    def setUp(self):
        with open(REFERENCE, encoding="utf-8") as f:
            self.text = f.read()

    def test_every_family_schema_is_documented_exactly(self):
        documented = reference_keys(self.text)
        self.assertGreater(len(documented), 40, "the reference's tables were not found")
        for name, family in sorted(FAMILIES.items()):
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


if __name__ == "__main__":
    unittest.main()

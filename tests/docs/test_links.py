"""Every relative markdown link in docs/, results/ and README.md points to a file
or folder that exists, and every #anchor to a heading of the target page.

Anchors follow GitHub's rule: the heading's text, lower-cased, punctuation other
than '-' and '_' dropped, spaces to '-', and '-1', '-2' ... for repeats. Links
inside code (fenced blocks, `spans`) are not links and are skipped. External
links (http:, https:, mailto:) are not followed."""

import os
import re
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def markdown_files():
    files = [os.path.join(REPO, "README.md")]
    for top in ("docs", "results"):
        for root, _dirs, names in os.walk(os.path.join(REPO, top)):
            files += [os.path.join(root, n) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.isfile(f))


def strip_code(text):
    """Text with fenced blocks, indented code blocks and inline code blanked out."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        if fenced or line.startswith("    ") or line.startswith("\t"):
            out.append("")
            continue
        out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, out = {}, set()
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not fenced:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path):
    with open(path, encoding="utf-8") as f:
        text = strip_code(f.read())
    for m in LINK.finditer(text):
        yield m.group(1) or m.group(2)


def broken_links(path):
    """(link, why) for every relative link of path that does not resolve."""
    bad = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        if not os.path.exists(dest):
            bad.append((target, "no such file"))
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append((target, f"no heading with anchor #{anchor} in {os.path.relpath(dest, REPO)}"))
    return bad


class LinksTest(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        files = markdown_files()
        self.assertGreater(len(files), 10, "docs/ was not found")
        problems = []
        for path in files:
            for target, why in broken_links(path):
                problems.append(f"{os.path.relpath(path, REPO)}: ({target}): {why}")
        self.assertEqual(problems, [], "broken links:\n" + "\n".join(problems))

    def test_checker_catches_a_broken_link_and_anchor(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "good.md")
            with open(good, "w", encoding="utf-8") as f:
                f.write("# Title\n\n## A section, with punctuation (x)\n\n## A section, with punctuation (x)\n")
            page = os.path.join(d, "page.md")
            with open(page, "w", encoding="utf-8") as f:
                f.write("[ok](good.md) [ok](good.md#a-section-with-punctuation-x) "
                        "[ok](good.md#a-section-with-punctuation-x-1) [ok](#local) [web](https://example.com)\n"
                        "[missing](nothere.md) [bad anchor](good.md#nope) `[code](nothere.md)`\n\n"
                        "    [indented code](nothere.md)\n\n## Local\n")
            self.assertEqual(broken_links(page), [
                ("nothere.md", "no such file"),
                ("good.md#nope", f"no heading with anchor #nope in {os.path.relpath(good, REPO)}"),
            ])


if __name__ == "__main__":
    unittest.main()

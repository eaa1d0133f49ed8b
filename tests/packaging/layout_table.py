#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md's table of folders stays true (issue 34): every
folder of the layers (the folders under core/, storage/, platform/,
programs/ and modules/ that hold C files) has a row, every row names such
a folder, and each row's line count is within 15% of the folder's C files
(.c and .h, its subfolders included) today. A folder that grew or shrank
more than that wants its row, and probably its words, looked at again.

  python3 tests/packaging/layout_table.py [ROOT]          check (exit 1)
  python3 tests/packaging/layout_table.py --print [ROOT]  the rows as they are
"""
import glob
import os
import re
import sys

LAYERS = ("core", "storage", "platform", "programs", "modules")
ROW = re.compile(r"^\|\s*`([a-z0-9_/]+)`\s*\|\s*([\d,]+)\s*\|\s*(\d+)\s*\|")
TOLERANCE = 0.15


def folders(root):
    """Each layer's folders: storage/ itself (its files are split between
    it and its dialects) and the immediate subfolders of the others."""
    out = {}
    for layer in LAYERS:
        base = os.path.join(root, layer)
        subs = [d for d in sorted(glob.glob(os.path.join(base, "*")))
                if os.path.isdir(d)]
        own = glob.glob(os.path.join(base, "*.[ch]"))
        if own:  # files of its own: the layer itself is a row
            out[layer] = count(base, recursive=False)
        for d in subs:
            n, files = count(d)
            if files:
                out[os.path.relpath(d, root)] = (n, files)
    return out


def count(d, recursive=True):
    pattern = os.path.join(d, "**", "*.[ch]") if recursive else \
        os.path.join(d, "*.[ch]")
    paths = glob.glob(pattern, recursive=recursive)
    n = 0
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            n += sum(1 for _ in f)
    return n, len(paths)


def main():
    args = [a for a in sys.argv[1:] if a != "--print"]
    root = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    tree = folders(root)
    if "--print" in sys.argv:
        for name, (n, files) in tree.items():
            print("| `%s` | %s | %d | |" % (name, format(n, ","), files))
        return 0
    rows = {}
    with open(os.path.join(root, "docs", "architecture.md"),
              encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows[m.group(1)] = (int(m.group(2).replace(",", "")),
                                    int(m.group(3)))
    bad = 0
    for name in sorted(set(tree) - set(rows)):
        print("layout_table: %s (%d lines) has no row in docs/architecture.md"
              % (name, tree[name][0]))
        bad += 1
    for name in sorted(set(rows) - set(tree)):
        print("layout_table: docs/architecture.md has a row for %s, which "
              "holds no C file" % name)
        bad += 1
    for name in sorted(set(rows) & set(tree)):
        said, now = rows[name][0], tree[name][0]
        if abs(now - said) > TOLERANCE * max(said, 1):
            print("layout_table: %s: the table says %d lines, the tree has "
                  "%d" % (name, said, now))
            bad += 1
    print("layout_table: %d folders, %d rows, %d fault(s)"
          % (len(tree), len(rows), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

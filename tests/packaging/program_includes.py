#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The programs' internal includes are the ones decision 0023 lists
(docs/decisions/0023-programs-apart.md): a program reaches the library
through its public headers, and through an internal header only when the
decision's table names it with its reason. Fails on an include under
programs/ of core/, storage/ or platform/ that the table does not name,
and on a header the table names that no program includes any more.

  python3 tests/packaging/program_includes.py [ROOT]
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:core|storage|platform)/[^"]+)"',
                     re.M)
HEADER = re.compile(r"`((?:core|storage|platform)/[A-Za-z0-9_./-]+\.h)`")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    record = os.path.join(root, "docs", "decisions", "0023-programs-apart.md")
    listed = set()
    with open(record, encoding="utf-8") as f:
        for line in f:
            if line.startswith("| `"):  # a row of the table: its first cell
                listed.update(HEADER.findall(line.split("|")[1]))
    used = {}
    for path in sorted(glob.glob(os.path.join(root, "programs", "**", "*.[ch]"),
                                 recursive=True)):
        with open(path, encoding="utf-8") as f:
            for h in INCLUDE.findall(f.read()):
                used.setdefault(h, []).append(os.path.relpath(path, root))
    bad = 0
    for h in sorted(set(used) - listed):
        print("program_includes: %s includes %s, which decision 0023 does "
              "not list" % (", ".join(used[h]), h))
        bad += 1
    for h in sorted(listed - set(used)):
        print("program_includes: decision 0023 lists %s, which no program "
              "includes" % h)
        bad += 1
    print("program_includes: %d internal header(s) in %d listed, %d fault(s)"
          % (len(used), len(listed), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

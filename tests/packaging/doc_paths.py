#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every path of the tree that the docs name exists (issue 34: a map that
stays true). Reads README.md, docs/**/*.md and tests/**/README.md; a path is
a word that starts with one of the tree's top folders and holds a slash.
It may name a file or folder, or the start of a name (docs/decisions/0018
for 0018-a-second-storage-backend.md, tests/crash/plsim for plsim.[ch]).
Paths under a build directory (build/tests/...) are not the tree's and are
not checked, nor patterns (*, {a,b}, ...). CHANGELOG.md is history: its
paths were true when written.

  python3 tests/packaging/doc_paths.py [ROOT]      exit 1 on a missing path
"""
import glob
import os
import re
import sys

TOP = ("core", "storage", "platform", "programs", "modules", "tests", "docs", "debian",
       "cmake", "examples")
# Not preceded by a path character: build/tests/x and ../shared/x are not
# the tree's. cmake/cc/pkg-config in prose is three words, not a path.
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[A-Za-z0-9_./*{}-]*[A-Za-z0-9_*}](?:\.\[[a-z]+\])?)"
                  % "|".join(TOP))
NOT_PATHS = {"cmake/cc/pkg-config"}


def docs(root):
    out = [os.path.join(root, "README.md")]
    out += glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)
    out += glob.glob(os.path.join(root, "tests", "**", "README.md"), recursive=True)
    return sorted(p for p in out if os.path.isfile(p)
                  and "node_modules" not in p and "/build" not in
                  os.path.relpath(p, root).join("//"))


def exists(root, path):
    path = re.sub(r"\.\[[a-z]+\]$", "", path)  # plsim.[ch]
    full = os.path.join(root, path)
    return os.path.exists(full) or bool(glob.glob(glob.escape(full) + "*"))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    missing = []
    checked = 0
    for doc in docs(root):
        rel = os.path.relpath(doc, root)
        with open(doc, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                for m in PATH.finditer(line):
                    p = m.group(1).rstrip(".")
                    if p in NOT_PATHS or "*" in p or "{" in p or "..." in p:
                        continue
                    checked += 1
                    if not exists(root, p):
                        missing.append("%s:%d: %s" % (rel, no, p))
    for m in missing:
        print("doc_paths: no such path: " + m)
    print("doc_paths: %d paths named in %d documents, %d missing"
          % (checked, len(docs(root)), len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

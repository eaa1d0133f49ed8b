#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The module contract's boundary (docs/decisions/0024-module-contract.md),
both ways:
  - a module (modules/NAME) includes only the public headers (oncebox*.h)
    and its own files: never core/, storage/ or platform/;
  - the engine names no business: no file under core/, storage/ or
    platform/loop/ says "payout" or "charge" (in any case), as
    `grep -ril 'payout\\|charge' core storage platform/loop` would show.

  python3 tests/packaging/module_includes.py [ROOT]   exit 1 on a breach
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
BUSINESS = re.compile(r"payout|charge", re.I)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    bad = 0
    modules = sorted(d for d in glob.glob(os.path.join(root, "modules", "*"))
                     if os.path.isdir(d))
    for mod in modules:
        own = {os.path.basename(p) for p in
               glob.glob(os.path.join(mod, "**", "*.h"), recursive=True)}
        for path in sorted(glob.glob(os.path.join(mod, "**", "*.[ch]"),
                                     recursive=True)):
            with open(path, encoding="utf-8") as f:
                for h in INCLUDE.findall(f.read()):
                    if h == "oncebox.h" or h in own:
                        continue
                    print("module_includes: %s includes \"%s\": a module "
                          "reaches oncebox through oncebox.h only"
                          % (os.path.relpath(path, root), h))
                    bad += 1
    named = 0
    for top in ("core", "storage", os.path.join("platform", "loop")):
        for path in sorted(glob.glob(os.path.join(root, top, "**", "*"),
                                     recursive=True)):
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if BUSINESS.search(line):
                        print("module_includes: %s:%d names the business: %s"
                              % (os.path.relpath(path, root), n,
                                 line.strip()[:100]))
                        named += 1
    print("module_includes: %d module(s), %d include fault(s), %d line(s) of "
          "the engine naming the business" % (len(modules), bad, named))
    return 1 if bad or named else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The engine's files form a tree (docs/architecture.md, "The engine"):
no two files of core/engine, core/fence, core/consumer, core/relay,
core/util, platform/consumer and platform/http call each other in a loop.
The graph is read from the objects of a build, as `nm` shows it: file A
calls file B when a symbol A's object needs (`nm -u`) is one B's object
defines. A hook (a function pointer set by the file above) is not a call,
which is the point: that is how a part reaches back.

  python3 tests/packaging/call_loops.py BUILD_DIR   exit 1 on a loop
"""
import glob
import os
import subprocess
import sys

FOLDERS = ("core/engine", "core/fence", "core/consumer", "core/relay",
           "core/util", "platform/consumer", "platform/http")


def symbols(obj, flag):
    out = subprocess.run(["nm", flag, obj], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        if flag == "-u":
            names.add(parts[-1])
        elif len(parts) == 3 and parts[1] in "TtDdBbRr":
            names.add(parts[2])
    return names


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    base = os.path.join(build, "CMakeFiles", "oncebox.dir")
    objs = {}
    for folder in FOLDERS:
        for o in sorted(glob.glob(os.path.join(base, folder, "*.c.o"))):
            objs[os.path.relpath(o, base)[:-2]] = o
    if not objs:
        print("call_loops: no objects under %s (build the library first)"
              % base)
        return 1
    defined = {f: symbols(o, "--defined-only") for f, o in objs.items()}
    owner = {}
    for f, names in defined.items():
        for n in names:
            owner.setdefault(n, f)
    calls = {f: set() for f in objs}
    for f, o in objs.items():
        for n in symbols(o, "-u"):
            g = owner.get(n)
            if g is not None and g != f:
                calls[f].add(g)
    # Tarjan's strongly connected components: a component of two or more
    # files is a loop.
    index, low, stack, on, loops = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(calls[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                loops.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(objs):
        if v not in index:
            visit(v)
    for comp in loops:
        print("call_loops: these files call each other in a loop: %s"
              % ", ".join(comp))
        for f in comp:
            print("  %s calls %s" % (f, ", ".join(sorted(calls[f] & set(comp)))))
    print("call_loops: %d files, %d loop(s)" % (len(objs), len(loops)))
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())

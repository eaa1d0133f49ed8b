#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write a CycloneDX 1.6 bill of materials (JSON) for each binary package.

debian/rules runs it after dh_shlibdeps, from the top of the source tree:

    python3 debian/sbom.py PACKAGE...

For each PACKAGE it reads the ELF files staged in debian/PACKAGE, follows
their NEEDED entries through the host architecture's library directories
(the libraries the package was built against), maps each library file to
the Debian package that ships it (dpkg-query -S), and writes
debian/PACKAGE/usr/share/doc/PACKAGE/sbom.ARCH.cdx.json listing:

  - the package itself (metadata.component): its version, Apache-2.0;
  - the sources compiled into it: llhttp when CMake took Debian 12's
    node-llhttp sources (OB_LLHTTP_FROM=sources in the build's cache) and
    the package declares Built-Using;
  - every Debian package its binaries need, directly or through another
    library, with the version installed at build time, its licences (the
    DEP-5 License: fields of /usr/share/doc/NAME/copyright, or NOASSERTION
    where that file is not machine-readable), its purl
    (pkg:deb/debian/NAME@VERSION?arch=ARCH) and one oncebox:soname
    property per library of the closure it provides;
  - dependencies: which component needs which.

Reproducible: no wall-clock time (metadata.timestamp is SOURCE_DATE_EPOCH,
omitted without it), sorted lists, and a serialNumber derived from the
content. The file name carries the architecture: the library packages are
Multi-Arch: same, and their files in /usr/share/doc must not differ between
architectures (docs/decisions/0026-terminal-package-checks.md).
tests/packaging/sbom_check.mjs validates it against the CycloneDX schema
and compares its libraries with tests/packaging/linked_libs.sh's closure.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from urllib.parse import quote

SPEC = "1.6"
PROJECT_LICENSE = "Apache-2.0"
# DEP-5 short names that are SPDX identifiers as they stand, or whose SPDX
# identifier is certain (Expat is SPDX's MIT). Any other name is kept as a
# licence name, not guessed at.
SPDX_IDS = {
    "Apache-2.0": "Apache-2.0", "MIT": "MIT", "Expat": "MIT", "ISC": "ISC",
    "CC0-1.0": "CC0-1.0", "CC-BY-4.0": "CC-BY-4.0", "Zlib": "Zlib",
    "BSD-2-Clause": "BSD-2-Clause", "BSD-2-clause": "BSD-2-Clause",
    "BSD-3-Clause": "BSD-3-Clause", "BSD-3-clause": "BSD-3-Clause",
    "PostgreSQL": "PostgreSQL", "MPL-2.0": "MPL-2.0",
    "GPL-2": "GPL-2.0-only", "GPL-2+": "GPL-2.0-or-later",
    "GPL-3": "GPL-3.0-only", "GPL-3+": "GPL-3.0-or-later",
    "LGPL-2.1": "LGPL-2.1-only", "LGPL-2.1+": "LGPL-2.1-or-later",
    "LGPL-3": "LGPL-3.0-only", "LGPL-3+": "LGPL-3.0-or-later",
}


def run(*args, check=True):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, check=False)
    if check and r.returncode != 0:
        sys.exit(f"sbom.py: {' '.join(args)}: exit {r.returncode}")
    return r.stdout


def arch_var(name):
    v = os.environ.get(name)
    return v if v else run("dpkg-architecture", "-q" + name).strip()


HOST_ARCH = arch_var("DEB_HOST_ARCH")
MULTIARCH = arch_var("DEB_HOST_MULTIARCH")
GNU_TYPE = arch_var("DEB_HOST_GNU_TYPE")
LIBDIRS = [f"/lib/{MULTIARCH}", f"/usr/lib/{MULTIARCH}", "/lib", "/usr/lib"]


def control_stanzas():
    """debian/control's binary package stanzas: {name: {field: value}}."""
    out, cur, key = {}, {}, None
    with open("debian/control", encoding="utf-8") as f:
        text = f.read()
    for para in re.split(r"\n\s*\n", text):
        cur, key = {}, None
        for line in para.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and key:
                cur[key] += "\n" + line.strip()
            elif ":" in line:
                key, v = line.split(":", 1)
                cur[key.strip()] = v.strip()
        if "Package" in cur:
            out[cur["Package"]] = cur
    return out


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def needed(path):
    out = run("readelf", "-d", path, check=False)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)


def staged_libdirs(packages):
    """Library directories of the packages being built, searched first: a
    library of this build (liboncebox.so.X) is found in its package."""
    dirs = []
    for p in packages:
        for d in (f"debian/{p}/usr/lib/{MULTIARCH}", f"debian/{p}/lib/{MULTIARCH}"):
            if os.path.isdir(d):
                dirs.append((p, d))
    return dirs


def closure(pkg, staged):
    """{soname: path} of everything the package's ELF files need, and the
    edges {soname or '': [soname]} ('' is the package itself)."""
    root = f"debian/{pkg}"
    elfs = []
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if not os.path.islink(p) and is_elf(p):
                elfs.append(p)
    found, edges = {}, {"": set()}
    queue = []
    for e in sorted(elfs):
        for so in needed(e):
            edges[""].add(so)
            if so not in found:
                found[so] = None
                queue.append(so)
    while queue:
        so = queue.pop(0)
        path = None
        for owner, d in staged:
            if os.path.exists(os.path.join(d, so)):
                path = ("staged", owner, os.path.join(d, so))
                break
        if path is None:
            for d in LIBDIRS:
                if os.path.exists(os.path.join(d, so)):
                    path = ("system", None, os.path.join(d, so))
                    break
        if path is None:
            sys.exit(f"sbom.py: {pkg}: {so} not found in {' '.join(LIBDIRS)}")
        found[so] = path
        edges[so] = set()
        for dep in needed(path[2]):
            edges[so].add(dep)
            if dep not in found:
                found[dep] = None
                queue.append(dep)
    return found, edges


def path_variants(path):
    """The same file under /lib and /usr/lib (merged /usr: dpkg knows only
    the name the package ships), and what a symlink points to."""
    out = []
    cands = [path]
    if os.path.islink(path):
        cands.append(os.path.join(os.path.dirname(path), os.readlink(path)))
    for c in cands:
        c = os.path.normpath(c)
        out.append(c)
        if c.startswith("/usr/lib/"):
            out.append(c[len("/usr"):])
        elif c.startswith("/lib/"):
            out.append("/usr" + c)
    return out


def owner_of(path):
    for c in path_variants(path):
        out = run("dpkg-query", "-S", c, check=False)
        for line in out.splitlines():
            m = re.match(r"^([^:,\s]+(?::[a-z0-9-]+)?): (.+)$", line)
            if m and m.group(2) == c:
                return m.group(1)
    sys.exit(f"sbom.py: no Debian package ships {path}")


def deb_info(qualified):
    fmt = "${Package}\t${Version}\t${Architecture}\t${source:Package}\t${source:Version}"
    out = run("dpkg-query", "-W", "-f", fmt, qualified).strip()
    name, version, arch, src, srcver = out.split("\t")
    return {"name": name, "version": version, "arch": arch,
            "source": src, "source_version": srcver}


def licenses_from_copyright(name, only=None):
    """Distinct DEP-5 License: short names of the Files paragraphs (those
    for debian/* left out: the packaging's licence, not the software's);
    with only, the paragraphs whose Files name that directory. None when the
    file is not machine-readable."""
    path = f"/usr/share/doc/{name}/copyright"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    if not re.match(r"^Format:\s*\S", text):
        return None
    names, picked = [], []
    for para in re.split(r"\n\s*\n", text):
        m_files = re.search(r"^Files:(.*(?:\n[ \t].*)*)", para, re.M)
        m_lic = re.search(r"^License:[ \t]*(.*)$", para, re.M)
        if not m_files or not m_lic or not m_lic.group(1).strip():
            continue
        files = m_files.group(1).split()
        if files and all(f.startswith("debian/") for f in files):
            continue
        names.append((files, m_lic.group(1).strip()))
    if only:
        picked = [l for files, l in names if any(f.startswith(only + "/") for f in files)]
    if not picked:
        picked = [l for _, l in names]
    seen = []
    for l in picked:
        if l not in seen:
            seen.append(l)
    return seen or None


def cdx_licenses(names, note):
    if names is None:
        return [{"license": {"name": "NOASSERTION",
                             "text": {"content": note}}}]
    out = []
    for n in names:
        lic = {"license": {"id": SPDX_IDS[n]} if n in SPDX_IDS else {"name": n}}
        if lic not in out:
            out.append(lic)
    return out


def purl(name, version, arch):
    return f"pkg:deb/debian/{quote(name, safe='')}@{quote(version, safe='.-_~')}?arch={arch}"


def compiled_in(pkg, stanza):
    """The sources compiled into the package: llhttp from node-llhttp when
    CMake took the sources and the package declares Built-Using."""
    if "Built-Using" not in stanza:
        return []
    cache = f"obj-{GNU_TYPE}/CMakeCache.txt"
    vals = {}
    try:
        with open(cache, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^([A-Za-z_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    vals[m.group(1)] = m.group(2)
    except OSError:
        sys.exit(f"sbom.py: no {cache}")
    if vals.get("OB_LLHTTP_FROM") != "sources":
        return []
    src = os.path.join(vals["LLHTTP_SOURCE_DIR"], "llhttp.c")
    info = deb_info(owner_of(src))
    upstream = info["version"].split("~", 1)[0]
    upstream = re.sub(r"^[0-9]+:", "", upstream).split("-", 1)[0]
    ref = purl(info["name"], info["version"], info["arch"])
    return [{
        "type": "library",
        "bom-ref": ref,
        "name": "llhttp",
        "version": upstream,
        "description": f"llhttp's C sources ({vals['LLHTTP_SOURCE_DIR']}) compiled into the binaries, "
                       f"from the Debian package {info['name']} {info['version']} "
                       f"(source {info['source']} {info['source_version']})",
        "licenses": cdx_licenses(licenses_from_copyright(info["name"], only="llhttp"),
                                 f"/usr/share/doc/{info['name']}/copyright is not machine-readable"),
        "purl": ref,
        "properties": [{"name": "oncebox:linkage", "value": "compiled-in"},
                       {"name": "oncebox:debian-source",
                        "value": f"{info['source']} {info['source_version']}"}],
    }]


def bom(pkg, version, stanza, staged, packages):
    found, edges = closure(pkg, staged)
    root_ref = f"{pkg}@{version}?arch={HOST_ARCH}"
    comps = {}      # ref -> component
    ref_of = {}     # soname -> ref
    root_props = [{"name": "oncebox:architecture", "value": HOST_ARCH}]
    for so, (kind, owner, path) in sorted(found.items()):
        if kind == "staged" and owner == pkg:
            # A library of the package itself, needed by another of its files.
            root_props.append({"name": "oncebox:soname", "value": so})
            ref_of[so] = root_ref
            continue
        if kind == "staged":
            ref = f"{owner}@{version}?arch={HOST_ARCH}"
            if ref not in comps:
                comps[ref] = {"type": "library", "bom-ref": ref, "name": owner,
                              "version": version,
                              "licenses": [{"license": {"id": PROJECT_LICENSE}}],
                              "properties": []}
        else:
            info = deb_info(owner_of(path))
            ref = purl(info["name"], info["version"], info["arch"])
            if ref not in comps:
                comps[ref] = {
                    "type": "library", "bom-ref": ref, "name": info["name"],
                    "version": info["version"],
                    "licenses": cdx_licenses(
                        licenses_from_copyright(info["name"]),
                        f"/usr/share/doc/{info['name']}/copyright is not machine-readable"),
                    "purl": ref,
                    "properties": [{"name": "oncebox:debian-source",
                                    "value": f"{info['source']} {info['source_version']}"}],
                }
        comps[ref]["properties"].append({"name": "oncebox:soname", "value": so})
        ref_of[so] = ref
    inside = compiled_in(pkg, stanza)
    deps = {root_ref: {ref_of[s] for s in edges[""] if ref_of[s] != root_ref}
                      | {c["bom-ref"] for c in inside}}
    for so, targets in edges.items():
        if so:
            mine = ref_of[so]
            deps.setdefault(mine, set()).update(ref_of[t] for t in targets if ref_of[t] != mine)
    for c in inside:
        comps[c["bom-ref"]] = c
        deps.setdefault(c["bom-ref"], set())
    for ref in comps:
        deps.setdefault(ref, set())
        comps[ref]["properties"].sort(key=lambda p: (p["name"], p["value"]))
    desc = stanza.get("Description", "").split("\n", 1)[0]
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC,
        "version": 1,
        "metadata": {
            "tools": {"components": [{"type": "application", "name": "oncebox debian/sbom.py",
                                      "version": version}]},
            "component": {
                "type": "application" if pkg == "oncebox" or not pkg.startswith("lib") else "library",
                "bom-ref": root_ref,
                "name": pkg,
                "version": version,
                "description": desc,
                "licenses": [{"license": {"id": PROJECT_LICENSE}}],
                "properties": sorted(root_props, key=lambda p: (p["name"], p["value"])),
            },
        },
        "components": [comps[r] for r in sorted(comps)],
        "dependencies": [{"ref": r, "dependsOn": sorted(deps[r])} for r in sorted(deps)],
    }
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde:
        doc["metadata"]["timestamp"] = datetime.fromtimestamp(
            int(sde), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc["metadata"] = {"timestamp": doc["metadata"].pop("timestamp"), **doc["metadata"]}
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    serial = uuid.UUID(bytes=hashlib.sha256(body).digest()[:16], version=5)
    doc = {"bomFormat": doc.pop("bomFormat"), "specVersion": doc.pop("specVersion"),
           "serialNumber": f"urn:uuid:{serial}", **doc}
    return doc


def main():
    packages = sys.argv[1:]
    if not packages:
        sys.exit("usage: sbom.py PACKAGE...")
    version = run("dpkg-parsechangelog", "-S", "Version").strip()
    stanzas = control_stanzas()
    staged = staged_libdirs(packages)
    for pkg in packages:
        if pkg.endswith("-dbgsym") or pkg not in stanzas:
            continue
        doc = bom(pkg, version, stanzas[pkg], staged, packages)
        out = f"debian/{pkg}/usr/share/doc/{pkg}/sbom.{HOST_ARCH}.cdx.json"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.chmod(out, 0o644)
        print(f"sbom.py: {out}: {len(doc['components'])} components")


if __name__ == "__main__":
    main()

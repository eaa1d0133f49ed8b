// SPDX-License-Identifier: Apache-2.0
// sbom_check.mjs MANIFEST CLOSURE: the bill of materials of each package
// (debian/sbom.py) checked; run by sbom_check.sh, which writes the inputs:
//   MANIFEST  one line a package: PACKAGE<TAB>VERSION<TAB>SBOM<TAB>BUILT-USING
//             (SBOM: the extracted sbom.ARCH.cdx.json, or "-" when the
//             package has none)
//   CLOSURE   "PACKAGE SONAME" lines: tests/packaging/linked_libs.sh's
//             closure of each package (OB_LINKED_LIBS_OUT)
// For each package: the file validates against CycloneDX 1.6's JSON schema
// with @cyclonedx/cyclonedx-library's strict validator (it needs ajv,
// ajv-formats and ajv-formats-draft2019 beside it: tests/interop's
// package.json); it names the package, its version and Apache-2.0; its
// libraries (the oncebox:soname properties) are exactly the link test's
// closure; each Debian package in it has a version, a licence and a purl
// naming that version; the llhttp sources are listed as compiled in
// exactly when the package says Built-Using. Exit 1 on any failure.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../interop/package.json', import.meta.url));
let CDX;
try {
  CDX = require('@cyclonedx/cyclonedx-library');
} catch (e) {
  console.log('FAIL: @cyclonedx/cyclonedx-library not found in tests/interop/node_modules (bash tests/install-deps.sh)');
  process.exit(1);
}

const [manifestPath, closurePath] = process.argv.slice(2);
if (!manifestPath || !closurePath) {
  console.log('usage: sbom_check.mjs MANIFEST CLOSURE');
  process.exit(2);
}
const closure = new Map();
for (const line of readFileSync(closurePath, 'utf8').split('\n')) {
  const [pkg, so] = line.trim().split(/\s+/);
  if (!pkg || !so) continue;
  if (!closure.has(pkg)) closure.set(pkg, new Set());
  closure.get(pkg).add(so);
}

const validator = new CDX.Validation.JsonStrictValidator(CDX.Spec.Version.v1dot6);
let failed = 0;
const fail = (pkg, msg) => { console.log(`FAIL: ${pkg}: ${msg}`); failed++; };

for (const line of readFileSync(manifestPath, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const [pkg, version, sbomPath, builtUsing = ''] = line.split('\t');
  if (sbomPath === '-') { fail(pkg, 'no bill of materials in the package'); continue; }
  const text = readFileSync(sbomPath, 'utf8');
  let errors;
  try {
    errors = await validator.validate(text);
  } catch (e) {
    fail(pkg, `the validator could not run: ${e.message}`);
    continue;
  }
  if (errors !== null) {
    const list = (Array.isArray(errors) ? errors : [errors]).slice(0, 10)
      .map((e) => `${e.instancePath ?? ''} ${e.keyword ?? ''}: ${e.message ?? JSON.stringify(e).slice(0, 200)}`);
    fail(pkg, `not valid CycloneDX ${CDX.Spec.Version.v1dot6}:\n     ${list.join('\n     ')}`);
    continue;
  }
  const bom = JSON.parse(text);
  const before = failed;
  const me = bom.metadata?.component ?? {};
  if (me.name !== pkg) fail(pkg, `metadata.component.name is ${me.name}`);
  if (me.version !== version) fail(pkg, `metadata.component.version is ${me.version}, the package's ${version}`);
  if (!(me.licenses ?? []).some((l) => l.license?.id === 'Apache-2.0')) fail(pkg, 'oncebox is not listed as Apache-2.0');
  if (bom.metadata?.timestamp === undefined) fail(pkg, 'no metadata.timestamp (SOURCE_DATE_EPOCH)');

  // The libraries: every oncebox:soname property, on the package itself or
  // on a component, against the link test's closure.
  const listed = new Set();
  for (const c of [me, ...(bom.components ?? [])]) {
    for (const p of c.properties ?? []) if (p.name === 'oncebox:soname') listed.add(p.value);
  }
  const want = closure.get(pkg) ?? new Set();
  const missing = [...want].filter((s) => !listed.has(s)).sort();
  const extra = [...listed].filter((s) => !want.has(s)).sort();
  if (missing.length) fail(pkg, `libraries of the link test missing from the bill of materials: ${missing.join(' ')}`);
  if (extra.length) fail(pkg, `libraries in the bill of materials the link test did not find: ${extra.join(' ')}`);

  // The Debian packages.
  let debs = 0;
  for (const c of bom.components ?? []) {
    if (!c.version) fail(pkg, `component ${c.name} has no version`);
    if (!(c.licenses ?? []).length) fail(pkg, `component ${c.name} has no licence (NOASSERTION where unknown)`);
    if (c.purl?.startsWith('pkg:deb/debian/')) {
      const m = /^pkg:deb\/debian\/([^@]+)@([^?]+)\?arch=([a-z0-9]+)$/.exec(c.purl);
      if (!m) { fail(pkg, `purl ${c.purl} is not pkg:deb/debian/NAME@VERSION?arch=ARCH`); continue; }
      const linked = (c.properties ?? []).some((p) => p.name === 'oncebox:soname');
      if (linked) debs++;
      if (linked && (decodeURIComponent(m[1]) !== c.name || decodeURIComponent(m[2]) !== c.version)) {
        fail(pkg, `purl ${c.purl} does not name ${c.name} ${c.version}`);
      }
    }
  }

  // The sources compiled in: with Built-Using, llhttp's; without, none.
  const inside = (bom.components ?? []).filter((c) =>
    (c.properties ?? []).some((p) => p.name === 'oncebox:linkage' && p.value === 'compiled-in'));
  if (builtUsing.trim()) {
    if (!inside.some((c) => c.name === 'llhttp')) fail(pkg, `Built-Using: ${builtUsing}, but no compiled-in llhttp component`);
    for (const c of inside) {
      const src = (c.properties ?? []).find((p) => p.name === 'oncebox:debian-source')?.value ?? '';
      const [name, ver] = src.split(' ');
      if (!builtUsing.includes(`${name} (= ${ver})`)) fail(pkg, `compiled-in ${c.name} from ${src}, but Built-Using: ${builtUsing}`);
    }
  } else if (inside.length) {
    fail(pkg, `no Built-Using, but compiled in: ${inside.map((c) => c.name).join(' ')}`);
  }
  if (failed === before) {
    console.log(`   ${pkg}: valid CycloneDX ${bom.specVersion}, ${(bom.components ?? []).length} components ` +
      `(${debs} Debian packages linked${inside.length ? `, ${inside.map((c) => `${c.name} ${c.version}`).join(', ')} compiled in` : ''}), ` +
      `${listed.size} libraries = the link test's`);
  }
}
console.log(failed ? `sbom_check: FAILED (${failed})` : 'sbom_check: OK');
process.exit(failed ? 1 : 0);

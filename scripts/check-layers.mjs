#!/usr/bin/env node
// Enforce the package layering written in ARCHITECTURE.md, for package.json dependencies and
// for every import in each package's src/. Exits 1 and lists each violation when broken.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** Read the allowed-dependency table from the json block between the layers markers. */
export function readLayers(root) {
  const text = fs.readFileSync(path.join(root, 'ARCHITECTURE.md'), 'utf8');
  const match = /<!-- layers:begin -->\s*```json\s*([\s\S]*?)```\s*<!-- layers:end -->/.exec(text);
  if (!match) throw new Error('ARCHITECTURE.md has no layers block');
  return JSON.parse(match[1]);
}

function listPackages(root) {
  const out = [];
  for (const group of ['packages', 'apps']) {
    const dir = path.join(root, group);
    if (!fs.existsSync(dir)) continue;
    for (const name of fs.readdirSync(dir).sort()) {
      const manifest = path.join(dir, name, 'package.json');
      if (fs.existsSync(manifest))
        out.push({ dir: path.join(dir, name), manifest: JSON.parse(fs.readFileSync(manifest, 'utf8')) });
    }
  }
  return out;
}

function* sourceFiles(dir) {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(full);
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) yield full;
  }
}

const IMPORT_RE =
  /(?:import|export)\s[^'"`]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;

/**
 * The Karotte package a dependency or import specifier names (`@karotte/<name>`, or a package of
 * the table without the scope, such as the app `karotte`), with the rest of the path; else null.
 */
function karottePackage(spec, names) {
  const parts = spec.split('/');
  if (spec.startsWith('@karotte/')) return { target: parts.slice(0, 2).join('/'), rest: parts.slice(2) };
  if (names.has(parts[0])) return { target: parts[0], rest: parts.slice(1) };
  return null;
}

/** Return every layering violation under `root` as a human-readable line. */
export function checkLayers(root) {
  const layers = readLayers(root);
  const names = new Set(Object.keys(layers));
  const violations = [];
  const packages = listPackages(root);
  // A subpath a package declares in its `exports` (`@karotte/sandbox/confinement`) is a public
  // entry point too; any other path into a package is a deep import.
  const exported = new Map(
    packages.map(({ manifest }) => [manifest.name, new Set(Object.keys(manifest.exports ?? {}))]),
  );
  for (const { dir, manifest } of packages) {
    const name = manifest.name;
    const rel = path.relative(root, dir);
    if (!Object.hasOwn(layers, name)) {
      violations.push(`${rel}: package ${name} is not in the ARCHITECTURE.md layers table`);
      continue;
    }
    const allowed = new Set(layers[name]);
    const deps = { ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.optionalDependencies };
    for (const dep of Object.keys(deps)) {
      if (karottePackage(dep, names)?.rest.length === 0 && !allowed.has(dep)) {
        violations.push(`${rel}/package.json: ${name} may not depend on ${dep}`);
      }
    }
    for (const file of sourceFiles(path.join(dir, 'src'))) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT_RE)) {
        const spec = m[1] ?? m[2] ?? m[3];
        const where = path.relative(root, file);
        const named = karottePackage(spec, names);
        if (named !== null) {
          const { target, rest } = named;
          const subpath = `./${rest.join('/')}`;
          if (
            rest.length > 0 &&
            !(rest.length === 1 && rest[0] === 'package.json') &&
            !exported.get(target)?.has(subpath)
          ) {
            violations.push(`${where}: deep import ${spec} (use the public entry point ${target})`);
          }
          if (target === name) violations.push(`${where}: imports its own package ${target} by name`);
          else if (!allowed.has(target)) violations.push(`${where}: ${name} may not import ${target}`);
        } else if (spec.startsWith('.')) {
          const resolved = path.resolve(path.dirname(file), spec);
          if (!resolved.startsWith(dir + path.sep)) {
            violations.push(`${where}: relative import ${spec} leaves the package`);
          }
        }
      }
    }
  }
  return violations;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const violations = checkLayers(root);
  if (violations.length > 0) {
    process.stderr.write(
      `layering violations (see ARCHITECTURE.md):\n${violations.map((v) => `  - ${v}`).join('\n')}\n`,
    );
    process.exit(1);
  }
  process.stdout.write('layers: ok\n');
}

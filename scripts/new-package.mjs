#!/usr/bin/env node
// `node scripts/new-package.mjs <name>`: a new primitive, packages/<name> (@karotte/<name>),
// copied from templates/package with the name filled in. The template is a working package
// (errors after @karotte/base's pattern, a strict options schema, a unit test, a README in the
// project's shape); the generated files are formatted with the repository's prettier when it is
// installed. Then it prints what is left to do (CONTRIBUTING.md, "Contributing a new primitive").
//
// In the template, `template-package` stands for the name, `TemplatePackage` for its PascalCase
// and `templatePackage` for its camelCase, in file contents and file names alike.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const TEMPLATE_DIR = path.join(repoRoot, 'templates', 'package');
const TOKEN = 'template-package';

/** Why `name` cannot be a package name, or null when it can. */
export function nameProblem(name) {
  if (typeof name !== 'string' || name === '') return 'give the package name: new-package.mjs <name>';
  if (name.length > 50) return `${name} is longer than 50 characters`;
  if (!/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/.test(name)) {
    return `${name} is not a package name: lowercase words of letters and digits joined by "-", starting with a letter (e.g. net-guard)`;
  }
  if (name === TOKEN) return `${name} is the template's own placeholder`;
  return null;
}

function pascal(name) {
  return name
    .split('-')
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');
}

/** Fill the template's placeholders in with `name`. */
export function fillIn(text, name) {
  const upper = pascal(name);
  const lower = upper[0].toLowerCase() + upper.slice(1);
  return text
    .replaceAll(TOKEN, name)
    .replaceAll('TemplatePackage', upper)
    .replaceAll('templatePackage', lower);
}

function* templateFiles(dir, rel = '') {
  for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const file = path.posix.join(rel, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') yield* templateFiles(dir, file);
    } else if (entry.isFile()) yield file;
  }
}

/** Keep what the template shares with @karotte/base current: the ranges of the dependencies both have (zod). */
function syncWithBase(rel, text) {
  const file = path.join(repoRoot, 'packages', 'base', 'package.json');
  if (!fs.existsSync(file)) return text;
  const base = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (rel === 'package.json') {
    const manifest = JSON.parse(text);
    for (const dep of Object.keys(manifest.dependencies ?? {})) {
      const range = base.dependencies?.[dep];
      if (range !== undefined) manifest.dependencies[dep] = range;
    }
    return `${JSON.stringify(manifest, null, 2)}\n`;
  }
  return text;
}

async function loadPrettier() {
  try {
    return await import('prettier');
  } catch {
    return null;
  }
}

/**
 * Create `<root>/packages/<name>` from the template. Refuses an invalid name and an existing
 * directory. Returns `{ dir, files, formatted }` (files relative to `dir`).
 */
export async function createPackage({ name, root = repoRoot, templateDir = TEMPLATE_DIR }) {
  const problem = nameProblem(name);
  if (problem !== null) throw new Error(problem);
  const dir = path.join(root, 'packages', name);
  if (fs.existsSync(dir)) throw new Error(`${path.relative(root, dir)} already exists`);
  const prettier = await loadPrettier();
  const files = [];
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // Built beside the target and renamed into place: an error halfway leaves nothing behind.
  const staging = fs.mkdtempSync(path.join(path.dirname(dir), `.${name}-`));
  try {
    for (const rel of templateFiles(templateDir)) {
      const source = path.join(templateDir, rel);
      const target = fillIn(rel, name);
      let text = syncWithBase(rel, fillIn(fs.readFileSync(source, 'utf8'), name));
      if (prettier !== null) {
        // The template's own prettier configuration (the repository's), whatever `root` is.
        const config = (await prettier.resolveConfig(source)) ?? {};
        text = await prettier.format(text, { ...config, filepath: path.join(dir, target) });
      }
      fs.mkdirSync(path.dirname(path.join(staging, target)), { recursive: true });
      fs.writeFileSync(path.join(staging, target), text);
      files.push(target);
    }
    fs.renameSync(staging, dir);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return { dir, files: files.sort(), formatted: prettier !== null };
}

/** What is left to do after `createPackage`, as printed lines. */
export function nextSteps(name) {
  const pkg = `@karotte/${name}`;
  return [
    `Next (CONTRIBUTING.md, "Contributing a new primitive"):`,
    `  1. ARCHITECTURE.md: add "${pkg}": ["@karotte/base"] to the layers table (and each other`,
    `     package it needs, with a line under "Why these edges"), add it to the lists of the`,
    `     packages that will use it, and draw it in the diagram. Until then`,
    `     scripts/check-layers.mjs fails.`,
    `  2. pnpm install (links the package) and commit the pnpm-lock.yaml change with it.`,
    `  3. packages/${name}/package.json and README.md: the description and every section.`,
    `  4. Replace src/${name}.ts with the primitive; keep src/index.ts the only entry.`,
    `  5. pnpm changeset (a minor bump: the first release).`,
    `  6. The root README's package table; eslint.config.js PROCESS_OWNERS if it starts processes.`,
    `  7. npm test.`,
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [name, ...rest] = process.argv.slice(2);
  if (rest.length > 0 || name === '--help' || name === '-h') {
    process.stderr.write('Usage: node scripts/new-package.mjs <name>\n');
    process.exit(name === '--help' || name === '-h' ? 0 : 2);
  }
  try {
    const { dir, files, formatted } = await createPackage({ name });
    process.stdout.write(
      `created ${path.relative(repoRoot, dir)} (@karotte/${name}): ${files.join(', ')}` +
        `${formatted ? '' : ' (not formatted: run npm run setup, then pnpm format)'}\n\n${nextSteps(name).join('\n')}\n`,
    );
  } catch (error) {
    process.stderr.write(`new-package: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
}

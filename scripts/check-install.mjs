#!/usr/bin/env node
// Every publishable package installed alone, the way a user cherry-picks one defense.
//
// Every workspace package.json without `"private": true` is packed with `pnpm pack` (which
// rewrites `workspace:` ranges, as publishing does), and the tarballs are installed with npm
// (not pnpm) into a scratch project in a fresh directory under os.tmpdir(), outside the
// workspace, together with the TypeScript and @types/node the workspace uses (the version
// installed in the workspace, which satisfies the root package.json's range). A dependency that
// only resolved inside the workspace fails here. Then, one line per check:
//
//   pack     the tarball holds no `workspace:` range
//   license  the tarball holds LICENSE (the Apache License 2.0 text; pnpm packs the root one
//            into a package without its own) and its package.json says `"license": "Apache-2.0"`
//   node     the Node.js of the packages' engines floor (22.12.0, the first 22 with require(esm)
//            unflagged; pinned by tools/node-22.12), installed on first use like the other
//            pinned binaries (scripts/tools.mjs)
//   install  all tarballs, with npm, into the scratch project
//   alone    each package in a project of its own, with only its tarball and those of its
//            @karotte dependencies (as its README's Install says): `import()` and `require()`
//   deps     every bare import in the installed package's JavaScript and declaration files is a
//            Node.js builtin or a declared dependency (npm hoists, so an undeclared one could
//            still resolve in the scratch project)
//   esm      `import()` of every entry point; every value export of the types is there, and
//            nothing untyped
//   cjs      the same through `require()` from a CommonJS file (require(esm), Node.js 22.12+)
//   ts-esm   a strict TypeScript ESM consumer (module nodenext, strict, noUncheckedIndexedAccess,
//            exactOptionalPropertyTypes, skipLibCheck off) importing every value and type export,
//            compiled and run; the README examples written in TypeScript compile in it too
//   ts-cjs   the same consumer in a CommonJS project (package type commonjs, module nodenext)
//   bin      every `bin` of a package runs `--help` with exit status 0
//   example  the package README's first example, run in the scratch project (imports resolve to
//            the installed tarballs), its stdout compared strictly with its output block
//
// What a user's runtime decides (alone's import() and require(), esm, cjs, and running the
// compiled ts-esm and ts-cjs consumers) runs on two Node.js: the one this script runs on and
// 22.12.0 (skipped when they are the same); each line names the Node.js it ran on (`on Node.js
// 24.22.3 and 22.12.0` when both gave the same result, a line of its own for each otherwise).
// Everything else (npm, tsc, the bins and the examples) runs on this script's Node.js only.
//
// README examples. The example is the first ```js or ```ts block under `## Example`; its output
// is the next ```text block after it. An example needs root when the prose between the two
// blocks says `as root` (e.g. "Output (as root):"). Such examples run only as root; without
// root this script prints which it skipped and why, and with CI=true a skip is a failure.
// Examples name what they create `karotte-example-*` under os.tmpdir() and remove it; anything
// of that name an example leaves behind is a failure (and is removed).
//
// A bin-only package (a `bin`, no `.` entry point: the app `karotte`) shows commands instead:
// its example is the first ```sh block under `## Example`, and every line of it must be
// `npx <bin> …` (one of the package's bins; a line may continue on the next after a trailing
// backslash; blank lines are ignored; anything else, a comment included, is an error, and so is
// any character that would make sh do more than run one command, such as | ; > $ * or #). Each
// runs, in order, in the package's own `alone` project (where npx resolves the installed bin),
// as `npx --no <bin> …` (--no: a bin that is not installed fails instead of being fetched), with
// the tool environment's PATH (scripts/tools.mjs: this script's Node.js, npm beside it), and
// must exit 0; their stdout, concatenated, is compared with the next ```text block, with the
// same placeholders and the same `as root` rule. A bin-only README without `## Example` is
// skipped (its bin is still checked).
//
// Output blocks are compared line by line, exactly, except for these placeholders, each
// standing for a value that truly differs between runs (a fresh uid, a temporary path):
//
//   {{int}}     an integer                      -?[0-9]+
//   {{number}}  a decimal number                -?[0-9]+(.[0-9]+)?(e[+-]?[0-9]+)?
//   {{hex}}     lowercase hexadecimal digits    [0-9a-f]+
//   {{path}}    an absolute path                /[^\s'"`,]*
//   {{duration}} a wall time as the app prints it  950 ms, 3.2 s, 2 min 5 s
//
// Any other `{{...}}` in an output block is an error. Exit status 1 on any failure. The scratch
// directory is removed on success and on failure. Plain JavaScript; its only import is
// ./tools.mjs (npm, pnpm and the children's PATH, and the pinned Node.js 22.12.0). Runs on the
// Node.js it is started with (22.12+ or 24+), which is, with 22.12.0, the Node.js the checks
// exercise.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { isBuiltin } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { npmCommand, pinnedNode, pinnedNodeVersion, pnpmPath, toolEnv } from './tools.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ---------------------------------------------------------------------------------------------
// Pure helpers (exported for scripts/check-install.test.ts)

const PLACEHOLDERS = {
  int: '-?[0-9]+',
  number: '-?[0-9]+(?:\\.[0-9]+)?(?:e[+-]?[0-9]+)?',
  hex: '[0-9a-f]+',
  path: '/[^\\s\'"`,]*',
  // A wall time as the app prints it: `950 ms`, `3.2 s`, `2 min 5 s`.
  duration: '[0-9]+ ms|[0-9]+\\.[0-9] s|[0-9]+ min [0-9]+ s',
};

/** Turn one expected line into a RegExp, or throw on an unknown placeholder. */
function lineMatcher(line) {
  let source = '';
  let last = 0;
  for (const match of line.matchAll(/\{\{([^{}]*)\}\}/g)) {
    const pattern = PLACEHOLDERS[match[1]];
    if (pattern === undefined) {
      throw new Error(
        `unknown placeholder {{${match[1]}}} (known: ${Object.keys(PLACEHOLDERS)
          .map((name) => `{{${name}}}`)
          .join(', ')})`,
      );
    }
    source += `${escapeRegExp(line.slice(last, match.index))}(?:${pattern})`;
    last = match.index + match[0].length;
  }
  source += escapeRegExp(line.slice(last));
  return new RegExp(`^${source}$`);
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Why an output block is unusable (an unknown placeholder), or undefined. */
export function outputBlockProblem(expected) {
  for (const text of expected.split('\n')) {
    try {
      lineMatcher(text);
    } catch (error) {
      return error.message;
    }
  }
  return undefined;
}

/**
 * Compare a program's stdout with an output block. Returns undefined when they match, else a
 * sentence naming the first line that differs. Both sides lose one trailing newline; every other
 * character must match, except placeholders.
 */
export function compareOutput(expected, actual) {
  const want = expected.replace(/\n$/, '').split('\n');
  const got = actual.replace(/\n$/, '').split('\n');
  for (let i = 0; i < Math.max(want.length, got.length); i += 1) {
    if (i >= want.length) return `line ${i + 1}: unexpected extra output ${JSON.stringify(got[i])}`;
    if (i >= got.length) return `line ${i + 1}: output ended, expected ${JSON.stringify(want[i])}`;
    if (!lineMatcher(want[i]).test(got[i])) {
      return `line ${i + 1}: expected ${JSON.stringify(want[i])}, got ${JSON.stringify(got[i])}`;
    }
  }
  return undefined;
}

/** The level-2 section `title` of a markdown text (up to the next level-2 heading), or undefined. */
function section(markdown, title) {
  const lines = markdown.split('\n');
  let inFence = false;
  let start = -1;
  for (let i = 0; i < lines.length; i += 1) {
    if (/^\s*(```|~~~)/.test(lines[i])) inFence = !inFence;
    if (inFence || !lines[i].startsWith('## ')) continue;
    if (start >= 0) return lines.slice(start, i).join('\n');
    if (lines[i].slice(3).trim() === title) start = i + 1;
  }
  return start >= 0 ? lines.slice(start).join('\n') : undefined;
}

/** Fenced code blocks of a markdown text, in order, with the prose before each. */
function fences(markdown) {
  const blocks = [];
  const lines = markdown.split('\n');
  let prose = [];
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (!open) {
      prose.push(lines[i]);
      continue;
    }
    const body = [];
    let j = i + 1;
    while (j < lines.length && !/^```\s*$/.test(lines[j])) body.push(lines[j++]);
    blocks.push({ lang: open[1], body: body.join('\n'), before: prose.join('\n') });
    prose = [];
    i = j;
  }
  return blocks;
}

/**
 * The README's first example: `{ lang, code, output, needsRoot }`, or `{ error }` saying what is
 * missing. See the header for the rules.
 */
export function readmeExample(markdown) {
  const text = section(markdown, 'Example');
  if (text === undefined) return { error: 'no `## Example` section' };
  const blocks = fences(text);
  const index = blocks.findIndex((block) => block.lang === 'ts' || block.lang === 'js');
  if (index < 0) return { error: 'no ```ts or ```js block under `## Example`' };
  const outputIndex = blocks.findIndex((block, i) => i > index && block.lang === 'text');
  if (outputIndex < 0) return { error: 'no ```text output block after the example' };
  const between = blocks
    .slice(index + 1, outputIndex + 1)
    .map((block) => block.before)
    .join('\n');
  return {
    lang: blocks[index].lang,
    code: `${blocks[index].body}\n`,
    output: blocks[outputIndex].body,
    needsRoot: /\bas\s+root\b/i.test(between),
  };
}

/**
 * The words of one command line as sh would split a plain command: blanks separate words,
 * '…' quotes anything literally, "…" too except that \, $ and ` are refused inside it. Any
 * character outside quotes that would make sh do more than run one command (| & ; < > ( ) $ `
 * \ * ? [ ] { } ~ # !) is refused. Returns `{ words }` or `{ error }`.
 */
export function shellWords(text) {
  const words = [];
  let word;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === ' ' || char === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === "'" || char === '"') {
      const end = text.indexOf(char, i + 1);
      if (end < 0) return { error: `unterminated ${char} quote` };
      const quoted = text.slice(i + 1, end);
      if (char === '"' && /[\\$`]/.test(quoted)) {
        return { error: `${JSON.stringify(quoted.match(/[\\$`]/)[0])} inside "…" (use '…')` };
      }
      word = (word ?? '') + quoted;
      i = end;
    } else if (/[|&;<>()$`\\*?[\]{}~#!]/.test(char)) {
      return { error: `${JSON.stringify(char)} outside quotes (only a plain command runs)` };
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return { words };
}

/**
 * A bin-only package's example: the first ```sh block under `## Example`, each of its lines an
 * `npx <bin> …` command for one of `bins`, and the next ```text block. Returns `{ lang: 'sh',
 * commands: [{ line, text, args }], output, needsRoot }` (`line` counts from the block's first
 * line, `args` is what follows `npx`), or `{ error }`. See the header for the rules.
 */
export function readmeCommandExample(markdown, bins) {
  const text = section(markdown, 'Example');
  if (text === undefined) return { error: 'no `## Example` section' };
  const blocks = fences(text);
  const index = blocks.findIndex((block) => block.lang === 'sh');
  if (index < 0) return { error: 'no ```sh block under `## Example`' };
  const outputIndex = blocks.findIndex((block, i) => i > index && block.lang === 'text');
  if (outputIndex < 0) return { error: 'no ```text output block after the ```sh block' };
  const wanted = bins.map((bin) => `npx ${bin} …`).join(' or ');
  const physical = blocks[index].body.split('\n');
  const commands = [];
  for (let i = 0; i < physical.length; i += 1) {
    const first = i + 1;
    let logical = physical[i];
    while (/\\$/.test(logical)) {
      if (i + 1 >= physical.length) return { error: `sh line ${first}: a trailing \\ continues no line` };
      logical = logical.slice(0, -1) + physical[++i];
    }
    logical = logical.trim();
    if (logical === '') continue;
    const where = `sh line ${first}`;
    if (!bins.some((bin) => logical.startsWith(`npx ${bin} `) || logical === `npx ${bin}`)) {
      return {
        error: `${where}: \`${logical}\` is not an \`${wanted}\` command (the only kind an example runs)`,
      };
    }
    const split = shellWords(logical);
    if (split.error) return { error: `${where}: ${split.error}: \`${logical}\`` };
    commands.push({ line: first, text: logical, args: split.words.slice(1) });
  }
  if (commands.length === 0) return { error: 'the ```sh block under `## Example` holds no command' };
  const between = blocks
    .slice(index + 1, outputIndex + 1)
    .map((block) => block.before)
    .join('\n');
  return {
    lang: 'sh',
    commands,
    output: blocks[outputIndex].body,
    needsRoot: /\bas\s+root\b/i.test(between),
  };
}

/**
 * Why a packed tarball's license is wrong, or undefined. `files` are the tarball's paths
 * (`package/…`), `licenseText` the text of its `package/LICENSE`: it must be there and be the
 * Apache License 2.0, and the packed package.json must say `"license": "Apache-2.0"`.
 */
export function licenseProblem(files, manifest, licenseText) {
  const problems = [];
  if (!files.includes('package/LICENSE')) problems.push('the tarball has no LICENSE');
  else if (!/Apache License\s+Version 2\.0\b/.test(licenseText ?? ''))
    problems.push('its LICENSE is not the Apache License 2.0');
  if (manifest.license !== 'Apache-2.0') {
    problems.push(`package.json license is ${JSON.stringify(manifest.license)}, not "Apache-2.0"`);
  }
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** Bare module specifiers imported or required by a JavaScript text. */
export function bareImports(source) {
  const found = new Set();
  const patterns = [
    // Not after a quote: `case "import": {…` is a string, not a statement.
    /(?:^|[^\w$."'`])(?:import|export)\s*(?:[\w$*{}\s,]+?\s*from\s*)?["']([^"']+)["']/g,
    /(?:^|[^\w$."'`])(?:import|require)\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) {
      const spec = match[1];
      if (spec.startsWith('.') || spec.startsWith('/') || /^[a-z]+:/.test(spec)) {
        if (spec.startsWith('node:')) found.add(spec);
        continue;
      }
      found.add(spec);
    }
  }
  return [...found].sort();
}

/** The package name of a bare specifier (`@scope/name/sub` → `@scope/name`). */
function packageOf(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Workspace packages that would be published: every package.json without `"private": true`. */
export function publishablePackages(root) {
  const out = [];
  const globs = readWorkspaceGlobs(root);
  for (const group of globs) {
    const dir = path.join(root, group);
    if (!fs.existsSync(dir)) continue;
    for (const name of fs.readdirSync(dir).sort()) {
      const file = path.join(dir, name, 'package.json');
      if (!fs.existsSync(file)) continue;
      const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (manifest.private === true) continue;
      out.push({ dir: path.join(dir, name), rel: path.relative(root, path.join(dir, name)), manifest });
    }
  }
  return out;
}

/** The `packages:` globs of pnpm-workspace.yaml, each `<dir>/*` (the only form this repo uses). */
function readWorkspaceGlobs(root) {
  const text = fs.readFileSync(path.join(root, 'pnpm-workspace.yaml'), 'utf8');
  const block = /^packages:\s*\n((?:\s+-\s*.+\n?)+)/m.exec(text);
  if (!block) throw new Error('pnpm-workspace.yaml has no packages list');
  return [...block[1].matchAll(/-\s*['"]?([^'"\n]+?)\/\*['"]?\s*$/gm)].map((m) => m[1]);
}

// ---------------------------------------------------------------------------------------------
// The run

/** tools/node-<FLOOR> pins the Node.js of the packages' engines floor (`^22.12.0 || >=24.0.0`). */
const FLOOR = '22.12';
const isRoot = process.getuid?.() === 0;
const inCI = process.env.CI === 'true' || process.env.CI === '1';
const counts = { ok: 0, failed: 0, skipped: 0 };

function line(status, check, name, detail) {
  counts[status === 'ok' ? 'ok' : status === 'skip' ? 'skipped' : 'failed'] += 1;
  const label = status === 'ok' ? 'ok  ' : status === 'skip' ? 'skip' : 'FAIL';
  process.stdout.write(`${label} ${check.padEnd(7)} ${name}${detail ? `  ${detail}` : ''}\n`);
}

function indent(text, limit = 40) {
  const lines = text.replace(/\n$/, '').split('\n');
  const shown =
    lines.length > limit ? [...lines.slice(0, limit), `… ${lines.length - limit} more lines`] : lines;
  return shown.map((l) => `       | ${l}`).join('\n');
}

function detailBlock(text) {
  if (text.trim() !== '') process.stdout.write(`${indent(text)}\n`);
}

/**
 * The environment of every child: scripts/tools.mjs's toolEnv, for this node unless told (the
 * pinned pnpm first, then a directory holding only that node, then the caller's PATH). One per
 * node, made on first use.
 */
const envs = new Map();
function childEnv(node = process.execPath) {
  if (!envs.has(node)) envs.set(node, toolEnv(node));
  return envs.get(node);
}

function exec(command, args, options = {}) {
  const started = Date.now();
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: childEnv(),
    maxBuffer: 64 * 1024 * 1024,
    timeout: 300_000,
    killSignal: 'SIGKILL',
    ...options,
  });
  return { ...result, seconds: ((Date.now() - started) / 1000).toFixed(1) };
}

function failureText(result) {
  if (result.error) return String(result.error.message ?? result.error);
  const why = result.signal ? `killed by ${result.signal}` : `exit status ${result.status}`;
  return `${why}\n${`${result.stdout ?? ''}${result.stderr ?? ''}`.trim()}`;
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function writeFile(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/**
 * Every JavaScript and declaration file of an installed package, its own node_modules excluded:
 * a type imported from an undeclared package breaks a consumer's type check as surely as a value
 * breaks its run.
 */
function* javascriptFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* javascriptFiles(full);
    else if (/\.(c|m)?js$|\.d\.(c|m)?ts$/.test(entry.name)) yield full;
  }
}

/** `exec` without blocking, so independent installs can overlap. */
function execAsync(command, args, options = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: childEnv(),
      timeout: 300_000,
      killSignal: 'SIGKILL',
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) =>
      resolve({ status: null, signal: null, error, stdout, stderr, seconds: '0.0' }),
    );
    child.on('close', (status, signal) =>
      resolve({ status, signal, stdout, stderr, seconds: ((Date.now() - started) / 1000).toFixed(1) }),
    );
  });
}

/** Run `tasks` (functions returning promises) with at most `limit` at a time, results in order. */
async function inParallel(tasks, limit) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** Entry-point subpaths of an exports map ('.', './schema/x.json', ...), package.json excluded. */
function entryPoints(manifest) {
  const exportsMap = manifest.exports;
  if (exportsMap === undefined) return manifest.main === undefined ? [] : ['.'];
  if (typeof exportsMap === 'string' || Array.isArray(exportsMap)) return ['.'];
  const keys = Object.keys(exportsMap);
  if (!keys.every((key) => key.startsWith('.'))) return ['.'];
  return keys.filter((key) => key !== './package.json' && !key.includes('*'));
}

/** Files a manifest points at (exports targets, main, types, bin) that must exist before packing. */
function manifestTargets(manifest) {
  const targets = new Set();
  const walk = (value) => {
    if (typeof value === 'string') targets.add(value);
    else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) walk(v);
  };
  walk(manifest.exports);
  walk(manifest.bin);
  for (const field of ['main', 'types', 'module'])
    if (typeof manifest[field] === 'string') targets.add(manifest[field]);
  return [...targets].filter((target) => !target.includes('*'));
}

/**
 * Value and type exports of each package's main entry, as TypeScript resolves them for a
 * consumer in `projectDir` (its installed typescript). Runs there as a child.
 */
const LIST_EXPORTS = `
import fs from 'node:fs';
import ts from 'typescript';
const names = JSON.parse(process.argv[2]);
const file = 'list-exports.ts';
fs.writeFileSync(file, names.map((name, i) => \`import * as p\${i} from \${JSON.stringify(name)};\\nexport { p\${i} };\\n\`).join(''));
const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2023, strict: true, noEmit: true, types: ['node'] };
const program = ts.createProgram([file], options);
const checker = program.getTypeChecker();
const source = program.getSourceFile(file);
const out = {};
let i = 0;
for (const statement of source.statements) {
  if (!ts.isImportDeclaration(statement)) continue;
  const name = names[i++];
  const moduleSymbol = checker.getSymbolAtLocation(statement.moduleSpecifier);
  if (!moduleSymbol) { out[name] = { error: 'TypeScript cannot resolve it (no types)' }; continue; }
  const values = [];
  const types = [];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const typeOnly = (symbol.declarations ?? []).some((d) =>
      (ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly)) ||
      (ts.isImportSpecifier?.(d) && d.isTypeOnly));
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    if (!typeOnly && (target.flags & ts.SymbolFlags.Value) !== 0) values.push(symbol.name);
    else types.push(symbol.name);
  }
  out[name] = { values: values.sort(), types: types.sort() };
}
fs.rmSync(file);
process.stdout.write(JSON.stringify(out));
`;

/** Loads every entry point of every package (ESM or CJS) and prints the export names as JSON. */
function loaderScript(kind, entries) {
  const load =
    kind === 'esm'
      ? `async (spec) => spec.endsWith('.json') ? await import(spec, { with: { type: 'json' } }) : await import(spec)`
      : `async (spec) => require(spec)`;
  return `${kind === 'esm' ? '' : "'use strict';\n"}const entries = ${JSON.stringify(entries)};
const load = ${load};
(async () => {
  const out = {};
  for (const spec of entries) {
    try {
      const value = await load(spec);
      out[spec] = { keys: Object.keys(value).filter((key) => !key.startsWith('__')), type: typeof value };
    } catch (error) {
      out[spec] = { error: String(error && error.stack ? error.stack : error).split('\\n').slice(0, 6).join('\\n') };
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
`;
}

/**
 * One entry point's load on one Node.js against what its types say: `{ status, head, tail,
 * block }` (a line reads `<head> on Node.js <version><tail>`; `block` is printed below it).
 */
function loadOutcome(how, outcome, types) {
  if (outcome === undefined) return { status: 'fail', head: how, tail: ': the loader reported nothing' };
  if (outcome.error) return { status: 'fail', head: `${how} threw`, tail: '', block: outcome.error };
  if (types === undefined) {
    const keys = outcome.keys.length > 0 ? `, ${outcome.keys.length} keys` : '';
    return { status: 'ok', head: how, tail: `: ${outcome.type}${keys}` };
  }
  if (types.error) return { status: 'fail', head: how, tail: `: ${types.error}` };
  if (types.values.length === 0)
    return { status: 'fail', head: how, tail: ': the types declare no value export' };
  const keys = new Set(outcome.keys);
  const missing = types.values.filter((value) => !keys.has(value));
  const untyped = outcome.keys.filter((key) => !types.values.includes(key) && key !== 'default');
  if (missing.length > 0 || untyped.length > 0) {
    const parts = [];
    if (missing.length > 0) parts.push(`typed but missing at runtime: ${missing.join(', ')}`);
    if (untyped.length > 0) parts.push(`exported at runtime but not typed: ${untyped.join(', ')}`);
    return { status: 'fail', head: how, tail: `: ${parts.join('; ')}` };
  }
  const sample = types.values.slice(0, 3).join(', ');
  return { status: 'ok', head: how, tail: `: all ${types.values.length} value exports (${sample}, …)` };
}

/**
 * Outcomes `{ runtime, status, head, tail, block }` grouped by everything but the runtime, in
 * the order each first appears: `[{ status, head, tail, block, runtimes }]`.
 */
export function byOutcome(list) {
  const groups = new Map();
  for (const { runtime, ...outcome } of list) {
    const key = JSON.stringify([outcome.status, outcome.head, outcome.tail, outcome.block ?? null]);
    if (!groups.has(key)) groups.set(key, { ...outcome, runtimes: [] });
    groups.get(key).runtimes.push(runtime);
  }
  return [...groups.values()];
}

/** A TypeScript consumer that imports every value and type export of every package. */
function consumerSource(kind, exportsByName) {
  const lines = [];
  const uses = [];
  Object.entries(exportsByName).forEach(([name, { values, types }], i) => {
    if (values.length > 0) {
      const aliased = values.map((value) => `${value} as v${i}_${value}`);
      lines.push(`import { ${aliased.join(', ')} } from ${JSON.stringify(name)};`);
      uses.push(...values.map((value) => `[${JSON.stringify(`${name} ${value}`)}, v${i}_${value}]`));
    }
    if (types.length > 0) {
      // Unused type imports are no error: each must still resolve to an export of the package.
      lines.push(
        `import type { ${types.map((type) => `${type} as t${i}_${type}`).join(', ')} } from ${JSON.stringify(name)};`,
      );
    }
    if (kind === 'cjs') {
      lines.push(`import ns${i} = require(${JSON.stringify(name)});`);
      uses.push(`[${JSON.stringify(`${name} (require)`)}, ns${i}]`);
    }
  });
  lines.push(
    '',
    `const values: ReadonlyArray<readonly [string, unknown]> = [${uses.join(', ')}];`,
    'const missing = values.filter(([, value]) => value === undefined).map(([name]) => name);',
    "if (missing.length > 0) throw new Error(`undefined at runtime: ${missing.join(', ')}`);",
    'console.log(`${values.length} imports`);',
    kind === 'esm' ? 'export {};' : '',
  );
  return `${lines.join('\n')}\n`;
}

const STRICT = {
  target: 'ES2023',
  lib: ['ES2023'],
  module: 'nodenext',
  moduleResolution: 'nodenext',
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  skipLibCheck: false,
  rootDir: 'src',
  outDir: 'out',
};

/**
 * Compile a TypeScript project (emitting even with errors). Returns its errors by file (relative
 * to the project; errors of no file under `(project)`) and the raw result.
 */
function compile(projectDir, tsc) {
  const result = exec(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: projectDir,
  });
  const byFile = new Map();
  let last = '(project)';
  for (const text of `${result.stdout}${result.stderr}`.split('\n')) {
    if (text.trim() === '') continue;
    const match = /^(.+?)\(\d+,\d+\): error /.exec(text);
    // A continuation line (an indented detail of the error above) belongs to that error's file.
    if (match) last = path.normalize(match[1]);
    else if (!/^\s/.test(text)) last = '(project)';
    byFile.set(last, [...(byFile.get(last) ?? []), text]);
  }
  if (result.status !== 0 && byFile.size === 0) byFile.set('(project)', [failureText(result)]);
  return { byFile, result };
}

function tmpEntries() {
  try {
    return new Set(fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('karotte-example-')));
  } catch {
    return new Set();
  }
}

/** A manifest's bins as `{ name: file }` (a string `bin` is named after the package). */
function binsOf(name, manifest) {
  return typeof manifest.bin === 'string' ? { [name.split('/').pop()]: manifest.bin } : (manifest.bin ?? {});
}

function slugOf(name) {
  return name.replace(/^@/, '').replace(/[^a-z0-9]+/gi, '-');
}

async function main() {
  const started = Date.now();
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (!((major === 22 && minor >= 12) || major >= 24)) {
    process.stderr.write(
      `check-install needs Node.js ^22.12.0 || >=24.0.0 (require(esm)), this is ${process.version}\n`,
    );
    process.exit(1);
  }
  const packages = publishablePackages(repoRoot);
  if (packages.length === 0) throw new Error('no publishable package found');
  process.stdout.write(
    `check-install: ${packages.length} publishable packages, Node.js ${process.versions.node}${isRoot ? ', as root' : ''}\n`,
  );

  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-install-'));
  const cleanup = () => fs.rmSync(scratch, { recursive: true, force: true });
  const onSignal = (signal) => {
    cleanup();
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await checkAll(packages, scratch);
  } finally {
    cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `check-install: ${counts.ok} ok, ${counts.failed} failed, ${counts.skipped} skipped (${seconds} s)\n`,
  );
  if (counts.failed > 0) process.exit(1);
}

async function checkAll(packages, scratch) {
  const packDir = path.join(scratch, 'packs');
  const project = path.join(scratch, 'project');
  fs.mkdirSync(packDir);
  fs.mkdirSync(project);

  // 1. Pack. A missing build output would pack into a tarball that installs and fails later,
  //    less clearly: say so first.
  const tarballs = [];
  const pnpm = pnpmPath();
  for (const pkg of packages) {
    const name = pkg.manifest.name;
    const missing = manifestTargets(pkg.manifest).filter(
      (target) => !fs.existsSync(path.join(pkg.dir, target)),
    );
    if (missing.length > 0) {
      line('fail', 'pack', name, `missing ${missing.join(', ')}: run \`pnpm build\` first`);
      continue;
    }
    const before = new Set(fs.readdirSync(packDir));
    const result = exec(pnpm, ['pack', '--pack-destination', packDir], { cwd: pkg.dir });
    const made = fs.readdirSync(packDir).filter((file) => !before.has(file) && file.endsWith('.tgz'));
    if (result.status !== 0 || made.length !== 1) {
      line('fail', 'pack', name, `pnpm pack: ${failureText(result)}`);
      continue;
    }
    const tarball = path.join(packDir, made[0]);
    const packed = exec('/bin/tar', ['-xzOf', tarball, 'package/package.json']);
    const ranges = Object.entries({
      ...JSON.parse(packed.stdout || '{}').dependencies,
      ...JSON.parse(packed.stdout || '{}').peerDependencies,
      ...JSON.parse(packed.stdout || '{}').optionalDependencies,
    }).filter(([, range]) => String(range).startsWith('workspace:'));
    if (packed.status !== 0 || ranges.length > 0) {
      line(
        'fail',
        'pack',
        name,
        packed.status !== 0
          ? failureText(packed)
          : `workspace ranges left: ${ranges.map(([d, r]) => `${d}@${r}`).join(', ')}`,
      );
      continue;
    }
    line('ok', 'pack', name, made[0]);
    tarballs.push({ pkg, tarball });
    // 1b. The license travels with the tarball.
    const listing = exec('/bin/tar', ['-tzf', tarball]);
    const files = listing.stdout.split('\n').filter((file) => file !== '');
    const licenseText = files.includes('package/LICENSE')
      ? exec('/bin/tar', ['-xzOf', tarball, 'package/LICENSE']).stdout
      : undefined;
    const problem =
      listing.status !== 0
        ? `tar -t: ${failureText(listing)}`
        : licenseProblem(files, JSON.parse(packed.stdout), licenseText);
    if (problem) line('fail', 'license', name, problem);
    else line('ok', 'license', name, 'LICENSE (Apache License 2.0), package.json license Apache-2.0');
  }
  if (tarballs.length === 0) return;

  // 1c. The Node.js of the engines floor, beside this one, for what a user's runtime decides.
  const runtimes = [{ version: process.versions.node, node: process.execPath }];
  const floorVersion = pinnedNodeVersion(FLOOR);
  if (floorVersion === process.versions.node) {
    line('ok', 'node', floorVersion, 'this script runs on the engines floor itself: checked once');
  } else if (process.platform !== 'linux' || process.arch !== 'x64') {
    line(
      inCI ? 'fail' : 'skip',
      'node',
      floorVersion,
      `the pinned binary is for linux-x64 only: runtime checks run on Node.js ${process.versions.node} alone`,
    );
  } else {
    try {
      const started = Date.now();
      const present = pinnedNode(FLOOR) !== undefined;
      const node = pinnedNode(FLOOR, { install: true });
      runtimes.push({ version: floorVersion, node });
      const how = present ? 'present' : `installed (${((Date.now() - started) / 1000).toFixed(1)} s)`;
      line('ok', 'node', floorVersion, `the engines floor (tools/node-${FLOOR}), ${how}: ${node}`);
    } catch (error) {
      line('fail', 'node', floorVersion, `tools/node-${FLOOR}: ${error.message}`);
    }
  }
  const versions = (list) => `Node.js ${list.map(({ version }) => version).join(' and ')}`;

  // 2. Install with npm, outside the workspace, with the workspace's TypeScript and @types/node.
  const rootManifest = readJson(path.join(repoRoot, 'package.json'));
  const toolSpecs = ['typescript', '@types/node'].map((dep) => {
    const range = rootManifest.devDependencies?.[dep] ?? rootManifest.dependencies?.[dep];
    if (range === undefined) throw new Error(`the root package.json does not list ${dep}`);
    const installed = path.join(repoRoot, 'node_modules', dep, 'package.json');
    const version = fs.existsSync(installed) ? readJson(installed).version : range;
    return `${dep}@${version}`;
  });
  // The packages' peers (vitest for the `testing` subpaths, optional elsewhere), at the version
  // the workspace tests them with: a user of a subpath installs its peer too.
  const ours = new Set(tarballs.map(({ pkg }) => pkg.manifest.name));
  const peerSpecs = [
    ...new Set(tarballs.flatMap(({ pkg }) => Object.keys(pkg.manifest.peerDependencies ?? {}))),
  ]
    .filter((dep) => !ours.has(dep))
    .sort()
    .map((dep) => {
      const installed = path.join(repoRoot, 'node_modules', dep, 'package.json');
      if (!fs.existsSync(installed)) throw new Error(`the workspace does not install the peer ${dep}`);
      return `${dep}@${readJson(installed).version}`;
    });
  toolSpecs.push(...peerSpecs);
  writeFile(
    path.join(project, 'package.json'),
    `${JSON.stringify({ name: 'karotte-install-check', version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  const npm = npmCommand();
  const install = exec(
    npm,
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...tarballs.map(({ tarball }) => tarball),
      ...toolSpecs,
    ],
    { cwd: project },
  );
  const npmVersion = exec(npm, ['--version'], { cwd: project }).stdout.trim();
  if (install.status !== 0) {
    line(
      'fail',
      'install',
      `${tarballs.length} tarballs`,
      `npm ${npmVersion} install: ${failureText(install)}`,
    );
    return;
  }
  line(
    'ok',
    'install',
    `${tarballs.length} tarballs + ${toolSpecs.join(' ')}`,
    `npm ${npmVersion}, ${install.seconds} s, in ${path.relative(os.tmpdir(), project)} under ${os.tmpdir()}`,
  );
  // 2b. Each package alone, as a user cherry-picks one defense: a fresh project with only its
  //     tarball and those of its @karotte dependencies (what its README's Install says), where
  //     import() and require() of it must work. The installs overlap; npm's cache is warm now.
  const byName = new Map(tarballs.map((entry) => [entry.pkg.manifest.name, entry]));
  const closure = (name, seen = new Set()) => {
    if (seen.has(name)) return seen;
    seen.add(name);
    for (const dep of Object.keys(byName.get(name)?.pkg.manifest.dependencies ?? {})) {
      if (byName.has(dep)) closure(dep, seen);
    }
    return seen;
  };
  const alone = await inParallel(
    tarballs.map(({ pkg }) => async () => {
      const name = pkg.manifest.name;
      const dir = path.join(scratch, 'alone', slugOf(name));
      writeFile(
        path.join(dir, 'package.json'),
        `${JSON.stringify({ name: `karotte-alone-${slugOf(name)}`, version: '0.0.0', private: true }, null, 2)}\n`,
      );
      const names = [...closure(name)].sort();
      const result = await execAsync(
        npm,
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          '--loglevel=error',
          ...names.map((dep) => byName.get(dep).tarball),
        ],
        { cwd: dir },
      );
      if (result.status !== 0) return { name, names, result, failed: `npm install: ${failureText(result)}` };
      if (!entryPoints(pkg.manifest).includes('.')) return { name, names, result };
      const spec = JSON.stringify(name);
      for (const runtime of runtimes) {
        const options = { cwd: dir, env: childEnv(runtime.node) };
        const on = versions([runtime]);
        const esm = await execAsync(
          runtime.node,
          ['--input-type=module', '-e', `await import(${spec});`],
          options,
        );
        if (esm.status !== 0)
          return { name, names, result, failed: `import() on ${on}: ${failureText(esm)}` };
        const cjs = await execAsync(runtime.node, ['-e', `require(${spec});`], options);
        if (cjs.status !== 0)
          return { name, names, result, failed: `require() on ${on}: ${failureText(cjs)}` };
      }
      return { name, names, result, loaded: true };
    }),
    3,
  );
  for (const { name, names, result, failed, loaded } of alone) {
    const what = names.length === 1 ? '1 tarball' : `${names.length} tarballs (${names.join(', ')})`;
    if (failed) {
      line('fail', 'alone', name, `${what}: ${failed.split('\n')[0]}`);
      detailBlock(failed.split('\n').slice(1).join('\n'));
    } else {
      const loads = loaded ? `, then import() and require() on ${versions(runtimes)}` : '';
      line('ok', 'alone', name, `npm install of ${what}${loads} (${result.seconds} s)`);
    }
  }

  const installed = tarballs.map(({ pkg }) => ({
    pkg,
    name: pkg.manifest.name,
    dir: path.join(project, 'node_modules', ...pkg.manifest.name.split('/')),
  }));

  // 3. Declared dependencies of what was installed.
  for (const { name, dir } of installed) {
    const manifest = readJson(path.join(dir, 'package.json'));
    const declared = new Set([
      name,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
      ...Object.keys(manifest.optionalDependencies ?? {}),
    ]);
    const used = new Set();
    const undeclared = new Set();
    for (const file of javascriptFiles(dir)) {
      for (const spec of bareImports(fs.readFileSync(file, 'utf8'))) {
        if (isBuiltin(spec)) continue;
        used.add(packageOf(spec));
        if (!declared.has(packageOf(spec)))
          undeclared.add(`${packageOf(spec)} (${path.relative(dir, file)})`);
      }
    }
    if (undeclared.size > 0)
      line('fail', 'deps', name, `imports undeclared dependencies: ${[...undeclared].join(', ')}`);
    else line('ok', 'deps', name, used.size === 0 ? 'no third-party import' : [...used].sort().join(', '));
  }

  // 4. What the types say each package exports.
  writeFile(path.join(project, 'list-exports.mjs'), LIST_EXPORTS);
  const listed = exec(process.execPath, ['list-exports.mjs', JSON.stringify(installed.map((p) => p.name))], {
    cwd: project,
  });
  const typed = listed.status === 0 ? JSON.parse(listed.stdout) : {};
  if (listed.status !== 0) line('fail', 'types', 'export listing', failureText(listed));
  const withMain = installed.filter(({ dir }) =>
    entryPoints(readJson(path.join(dir, 'package.json'))).includes('.'),
  );

  // 5. ESM import and CommonJS require of every entry point.
  const specs = [];
  for (const { name, dir } of installed) {
    for (const entry of entryPoints(readJson(path.join(dir, 'package.json')))) {
      specs.push(entry === '.' ? name : `${name}/${entry.slice(2)}`);
    }
  }
  writeFile(path.join(project, 'load-esm.mjs'), loaderScript('esm', specs));
  writeFile(path.join(project, 'load-cjs.cjs'), loaderScript('cjs', specs));
  for (const kind of ['esm', 'cjs']) {
    const how = kind === 'esm' ? 'import()' : 'require()';
    // Per entry point, what each Node.js gave: `{ status, head, tail, block }`, printed as
    // `<head> on Node.js <versions><tail>`, one line for the Node.js that agree.
    const outcomes = new Map(specs.map((spec) => [spec, []]));
    for (const runtime of runtimes) {
      const result = exec(runtime.node, [`load-${kind}.${kind === 'esm' ? 'mjs' : 'cjs'}`], {
        cwd: project,
        env: childEnv(runtime.node),
      });
      if (result.status !== 0) {
        line('fail', kind, 'loader', `on ${versions([runtime])}: ${failureText(result)}`);
        continue;
      }
      const loaded = JSON.parse(result.stdout);
      for (const spec of specs) {
        outcomes.get(spec).push({ runtime, ...loadOutcome(how, loaded[spec], typed[spec]) });
      }
    }
    for (const [spec, list] of outcomes) {
      for (const group of byOutcome(list)) {
        line(group.status, kind, spec, `${group.head} on ${versions(group.runtimes)}${group.tail}`);
        if (group.block) detailBlock(group.block);
      }
    }
  }

  // 6. README examples: read from the installed tarball (what npm users see).
  const examples = [];
  for (const { name, dir, pkg } of installed) {
    const readme = path.join(dir, 'README.md');
    const isLibrary = withMain.some((p) => p.name === name);
    if (!fs.existsSync(readme)) {
      line('fail', 'example', name, 'the tarball has no README.md');
      continue;
    }
    const markdown = fs.readFileSync(readme, 'utf8');
    if (!isLibrary && pkg.manifest.bin !== undefined) {
      // A command-line-only package shows its commands: `npx <bin> …` lines, run in step 9.
      const example = readmeCommandExample(markdown, Object.keys(binsOf(name, pkg.manifest)));
      if (example.error === 'no `## Example` section')
        line('skip', 'example', name, `${example.error} (a bin-only package: its bin is checked instead)`);
      else if (example.error) line('fail', 'example', name, `README.md: ${example.error}`);
      else examples.push({ name, slug: slugOf(name), ...example });
      continue;
    }
    const example = readmeExample(markdown);
    if (example.error) {
      line('fail', 'example', name, `README.md: ${example.error}`);
      continue;
    }
    const slug = slugOf(name);
    const file =
      example.lang === 'ts'
        ? path.join('src', 'examples', `${slug}.ts`)
        : path.join('examples', `${slug}.mjs`);
    writeFile(path.join(project, file), example.code);
    examples.push({ name, slug, file, ...example });
  }

  // 7. TypeScript consumers: ESM (with the TypeScript examples) and CommonJS.
  const tsc = path.join(project, 'node_modules', 'typescript', 'bin', 'tsc');
  const exportsByName = Object.fromEntries(
    withMain.filter(({ name }) => typed[name]?.values).map(({ name }) => [name, typed[name]]),
  );
  const consumers = [
    { kind: 'esm', dir: project, packageType: 'module' },
    { kind: 'cjs', dir: path.join(project, 'cjs'), packageType: 'commonjs' },
  ];
  const compiled = new Map();
  for (const { kind, dir, packageType } of consumers) {
    if (kind === 'cjs')
      writeFile(path.join(dir, 'package.json'), `${JSON.stringify({ type: packageType })}\n`);
    writeFile(path.join(dir, 'src', 'consumer.ts'), consumerSource(kind, exportsByName));
    writeFile(
      path.join(dir, 'tsconfig.json'),
      `${JSON.stringify({ compilerOptions: STRICT, include: ['src'] }, null, 2)}\n`,
    );
    const { byFile, result } = compile(dir, tsc);
    compiled.set(kind, byFile);
    const consumerErrors = [...byFile.entries()].filter(([file]) => !file.includes(`examples${path.sep}`));
    const check = `ts-${kind}`;
    const what = `${Object.keys(exportsByName).length} packages (module nodenext, package type ${packageType})`;
    if (consumerErrors.length > 0) {
      line('fail', check, what, `does not compile (${path.basename(tsc)} exit status ${result.status})`);
      detailBlock(consumerErrors.flatMap(([, errors]) => errors).join('\n'));
      continue;
    }
    const outcomes = runtimes.map((runtime) => {
      const ran = exec(runtime.node, [path.join('out', 'consumer.js')], {
        cwd: dir,
        env: childEnv(runtime.node),
      });
      return ran.status === 0
        ? { runtime, status: 'ok', head: 'compiles strict and runs', tail: `: ${ran.stdout.trim()}` }
        : { runtime, status: 'fail', head: 'compiles; running it failed', tail: `: ${failureText(ran)}` };
    });
    for (const group of byOutcome(outcomes)) {
      line(group.status, check, what, `${group.head} on ${versions(group.runtimes)}${group.tail}`);
    }
  }

  // 8. Bins.
  for (const { name, dir } of installed) {
    const bins = binsOf(name, readJson(path.join(dir, 'package.json')));
    for (const bin of Object.keys(bins)) {
      // In the package's own project (2b): what `npx <bin>` of the package alone would run.
      const result = exec(
        path.join(scratch, 'alone', slugOf(name), 'node_modules', '.bin', bin),
        ['--help'],
        {
          cwd: project,
          timeout: 60_000,
        },
      );
      if (result.status === 0 && result.stdout.trim() !== '')
        line('ok', 'bin', `${name} ${bin}`, '--help exits 0');
      else line('fail', 'bin', `${name} ${bin}`, `--help: ${failureText(result)}`);
    }
  }

  // 9. Run the examples, one at a time.
  const esmErrors = compiled.get('esm') ?? new Map();
  for (const example of examples) {
    const label = `${example.name} (README.md, ${example.lang})`;
    if (example.needsRoot && !isRoot) {
      if (inCI) line('fail', 'example', label, 'needs root, and CI=true forbids skipping it: run as root');
      else
        line(
          'skip',
          'example',
          label,
          'needs root (the sentence before its output says "as root"): run as root to include it',
        );
      continue;
    }
    if (example.lang === 'ts') {
      const errors = esmErrors.get(path.normalize(example.file));
      if (errors) {
        line('fail', 'example', label, 'does not compile under strict TypeScript');
        detailBlock(errors.join('\n'));
        continue;
      }
    }
    const blockProblem = outputBlockProblem(example.output);
    if (blockProblem) {
      line('fail', 'example', label, `output block: ${blockProblem}`);
      continue;
    }
    const before = tmpEntries();
    let ran;
    if (example.lang === 'sh') {
      // In the package's own project (2b), where `npx <bin>` resolves the installed bin.
      ran = runCommands(example.commands, path.join(scratch, 'alone', example.slug));
    } else {
      const script =
        example.lang === 'ts' ? path.join('out', 'examples', `${example.slug}.js`) : example.file;
      ran = exec(process.execPath, [script], { cwd: project, timeout: 180_000 });
    }
    const left = [...tmpEntries()].filter((entry) => !before.has(entry));
    for (const entry of left) fs.rmSync(path.join(os.tmpdir(), entry), { recursive: true, force: true });
    if (ran.status !== 0 || ran.signal || ran.error) {
      const which = ran.command ? `sh line ${ran.command.line} \`${ran.command.text}\`: ` : '';
      line('fail', 'example', label, `${which}${failureText(ran).split('\n')[0]} (${ran.seconds} s)`);
      detailBlock(`${ran.stdout ?? ''}${ran.stderr ?? ''}`);
      continue;
    }
    const mismatch = compareOutput(example.output, ran.stdout);
    if (mismatch) {
      line('fail', 'example', label, `stdout differs from the output block: ${mismatch}`);
      detailBlock(ran.stdout);
      continue;
    }
    if (left.length > 0) {
      line('fail', 'example', label, `left behind in ${os.tmpdir()}: ${left.join(', ')} (removed now)`);
      continue;
    }
    const of = example.lang === 'sh' ? ` of ${example.commands.length} npx commands` : '';
    const lines = ran.stdout.replace(/\n$/, '').split('\n').length;
    line('ok', 'example', label, `output${of} matches (${lines} lines, ${ran.seconds} s)`);
  }
}

/**
 * Run a bin-only example's commands in order in `dir` (as `npx --no …`, npx beside npm, on
 * this script's node through the tool environment), stopping at the first that fails. Returns
 * an `exec` result with their stdout and stderr concatenated; a failure names its `command`.
 */
function runCommands(commands, dir) {
  const npx = path.join(path.dirname(npmCommand()), 'npx');
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  let stdout = '';
  let stderr = '';
  for (const command of commands) {
    const ran = exec(npx, ['--no', ...command.args], { cwd: dir, timeout: 180_000 });
    stdout += ran.stdout ?? '';
    stderr += ran.stderr ?? '';
    if (ran.status !== 0 || ran.signal || ran.error) {
      return { ...ran, stdout, stderr, seconds: seconds(), command };
    }
  }
  return { status: 0, signal: null, stdout, stderr, seconds: seconds() };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  await main();
}

#!/usr/bin/env node
// The documentation checks `npm test` runs in its lint step:
//
// 1. docs/contract.md is a byte-identical copy of the contract, which lives outside the
//    repository, beside it: ../shared/contract.md from the repository root, or
//    $KAROTTE_SHARED_DIR/contract.md. When the shared copy is missing the check is skipped
//    with the reason, except under CI, where a missing shared copy is a failure.
// 2. Every relative link in the repository's own Markdown (README.md, CONTRIBUTING.md,
//    ARCHITECTURE.md, docs/**, packages/*/README.md, apps/*/README.md) points at a file or
//    directory that exists inside the repository and is part of a fresh clone (not under
//    node_modules/, dist/ or another build directory). A link that leaves the repository
//    (../../../shared/contract.md) is an error: it is broken on every copy but one.
//
// Exits 1 and lists every problem when a check fails. Plain JavaScript, no dependency.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** Directories that never hold the repository's own documentation. */
const SKIPPED_DIRS = new Set(['node_modules', '.git', '.turbo', '.tools', 'dist', 'coverage']);
/** Build and install output: present in a working checkout, absent from a fresh clone. */
const BUILD_DIRS = new Set(['node_modules', 'dist', '.turbo', '.tools', 'coverage']);

/** True when the environment variable CI is set (to anything but "", "0" or "false"). */
export function isCI(env = process.env) {
  const value = env.CI;
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

/** The directory holding the shared contract: $KAROTTE_SHARED_DIR, else ../shared of `root`. */
export function sharedDirOf(root, env = process.env) {
  const override = env.KAROTTE_SHARED_DIR;
  if (override !== undefined && override !== '') return path.resolve(root, override);
  return path.resolve(root, '..', 'shared');
}

/**
 * Compare docs/contract.md with the shared contract. Returns `{ errors, notes }`: `errors`
 * fail the check, `notes` are printed (a skipped comparison outside CI).
 */
export function checkContractCopy(root, { sharedDir = sharedDirOf(root), ci = isCI() } = {}) {
  const errors = [];
  const notes = [];
  const copy = path.join(root, 'docs', 'contract.md');
  const shared = path.join(sharedDir, 'contract.md');
  if (!fs.existsSync(copy)) {
    errors.push(`docs/contract.md is missing: copy ${shared} there`);
    return { errors, notes };
  }
  if (!fs.existsSync(shared)) {
    const reason = `the shared contract ${shared} is missing (set KAROTTE_SHARED_DIR to the directory that holds contract.md)`;
    if (ci) errors.push(`${reason}; under CI the copy must be compared, never skipped`);
    else notes.push(`docs/contract.md not compared: ${reason}`);
    return { errors, notes };
  }
  const a = fs.readFileSync(copy);
  const b = fs.readFileSync(shared);
  if (!a.equals(b)) {
    errors.push(
      `docs/contract.md differs from ${shared} (first difference on line ${firstDifferentLine(a, b)}): copy it again, byte for byte`,
    );
  }
  return { errors, notes };
}

function firstDifferentLine(a, b) {
  const length = Math.min(a.length, b.length);
  let line = 1;
  for (let i = 0; i < length; i += 1) {
    if (a[i] !== b[i]) return line;
    if (a[i] === 0x0a) line += 1;
  }
  return line;
}

/** The Markdown files whose links are checked, relative to `root`, sorted. */
export function markdownFiles(root) {
  const files = [];
  for (const name of ['README.md', 'CONTRIBUTING.md', 'ARCHITECTURE.md']) {
    if (fs.existsSync(path.join(root, name))) files.push(name);
  }
  const walk = (dir) => {
    const full = path.join(root, dir);
    if (!fs.existsSync(full)) return;
    for (const entry of fs.readdirSync(full, { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) walk(rel);
      else if (entry.isFile() && entry.name.endsWith('.md')) files.push(rel);
    }
  };
  walk('docs');
  for (const group of ['packages', 'apps']) {
    const dir = path.join(root, group);
    if (!fs.existsSync(dir)) continue;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const readme = path.posix.join(group, entry.name, 'README.md');
      if (entry.isDirectory() && fs.existsSync(path.join(root, readme))) files.push(readme);
    }
  }
  return files.sort();
}

/**
 * The link targets of a Markdown text with their line numbers: inline links and images
 * (`[text](target "title")`, `<target>` form too) and reference definitions (`[id]: target`).
 * Fenced code blocks and code spans are skipped: what they show is not a link.
 */
export function linksOf(text) {
  const links = [];
  let fence = null;
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(raw);
    if (fence !== null) {
      if (
        opening &&
        opening[1][0] === fence[0] &&
        opening[1].length >= fence.length &&
        raw.trim() === opening[1]
      )
        fence = null;
      continue;
    }
    if (opening) {
      fence = opening[1];
      continue;
    }
    const definition = /^ {0,3}\[(?!\^)[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(raw);
    if (definition) {
      links.push({ target: unwrap(definition[1]), line });
      continue;
    }
    const prose = raw.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length));
    for (const match of prose.matchAll(/\]\(\s*(<[^>]*>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)/g)) {
      links.push({ target: unwrap(match[1]), line });
    }
  }
  return links;
}

function unwrap(target) {
  return target.startsWith('<') && target.endsWith('>') ? target.slice(1, -1) : target;
}

/** True for a target that is a relative (repository) link, not a URL, a mail address or an anchor. */
export function isRelativeLink(target) {
  if (target === '' || target.startsWith('#')) return false;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return false;
  return !target.startsWith('//');
}

/** Every broken relative link of the repository's Markdown, as `file:line: message` lines. */
export function checkLinks(root) {
  const errors = [];
  const realRoot = fs.realpathSync(root);
  let count = 0;
  for (const file of markdownFiles(root)) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const { target, line } of linksOf(text)) {
      if (!isRelativeLink(target)) continue;
      count += 1;
      const problem = linkProblem(root, realRoot, file, target);
      if (problem !== null) errors.push(`${file}:${line}: link ${target} ${problem}`);
    }
  }
  return { errors, count };
}

function linkProblem(root, realRoot, file, target) {
  let decoded;
  try {
    decoded = decodeURIComponent(target.replace(/[?#].*$/, ''));
  } catch {
    return 'is not a valid URL path';
  }
  if (decoded === '') return null;
  // A leading "/" means the repository root, as GitHub renders it.
  const resolved = decoded.startsWith('/')
    ? path.join(root, decoded)
    : path.resolve(root, path.dirname(file), decoded);
  const relative = path.relative(root, resolved);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    return 'leaves the repository (a link must point at a file inside it)';
  }
  const segments = relative.split(path.sep);
  const build = segments.find((segment) => BUILD_DIRS.has(segment));
  if (build !== undefined) return `points into ${build}/, which a fresh clone does not have`;
  if (!fs.existsSync(resolved)) return `points at ${relative || '.'}, which does not exist`;
  const real = fs.realpathSync(resolved);
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) {
    return 'resolves (through a symbolic link) outside the repository';
  }
  return null;
}

/** Run both checks; returns `{ errors, notes, links }`. */
export function checkDocs(root, options = {}) {
  const contract = checkContractCopy(root, options);
  const links = checkLinks(root);
  return { errors: [...contract.errors, ...links.errors], notes: contract.notes, links: links.count };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { errors, notes, links } = checkDocs(root);
  for (const note of notes) process.stderr.write(`[karotte] ${note}\n`);
  if (errors.length > 0) {
    process.stderr.write(`documentation check failed:\n${errors.map((e) => `  - ${e}`).join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write(
    `docs: ok (${links} relative links${notes.length > 0 ? '' : ', docs/contract.md identical to the shared contract'})\n`,
  );
}

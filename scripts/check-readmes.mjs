#!/usr/bin/env node
// Check every package README against CONTRIBUTING.md's "Package README shape": each package
// under packages/ and each publishable workspace package (no `"private": true`, e.g. the app
// `karotte`) has a README.md, lists it in package.json `files`, and has the level-2 sections of
// its kind in order. Exits 1 and lists each problem when broken.
//
// Library packages (an exports entry point `.`, or `main`): the sections below in this order,
// no other level-2 section; optional ones may be left out (Benchmarks is required once
// bench/<dir>/ exists). Command-line packages (a `bin` and no `.` entry point): Install first,
// What it does NOT protect against last, and Errors and exit status and Platform support
// between them in that order; other sections (commands, examples, guides) may come anywhere
// between the first and the last.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** The sections of a library package README, in order. */
export const LIBRARY_SECTIONS = [
  { title: 'Install', required: true },
  { title: 'Example', required: true },
  { title: 'API', required: true },
  { title: 'Errors', required: true },
  { title: 'How it works', required: false },
  { title: 'Platform support', required: true },
  { title: 'Benchmarks', required: 'when bench/<dir>/ exists' },
  { title: 'What it does NOT protect against', required: true },
];

/** The sections a command-line package README must have, in order (others may come between). */
export const COMMAND_LINE_SECTIONS = [
  'Install',
  'Errors and exit status',
  'Platform support',
  'What it does NOT protect against',
];

/** The title line and the level-2 headings of a markdown text, fenced code blocks excluded. */
export function headings(markdown) {
  const out = { title: undefined, sections: [], introLines: 0 };
  let fence;
  let beforeFirstSection = true;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line);
    if (marker) {
      if (fence === undefined) fence = marker[1][0];
      else if (marker[1][0] === fence) fence = undefined;
      if (beforeFirstSection && out.title !== undefined) out.introLines += 1;
      continue;
    }
    if (fence !== undefined) {
      if (beforeFirstSection && out.title !== undefined) out.introLines += 1;
      continue;
    }
    if (out.title === undefined && /^# /.test(line)) {
      out.title = line.slice(2).trim();
    } else if (/^## /.test(line)) {
      out.sections.push(line.slice(3).trim());
      beforeFirstSection = false;
    } else if (beforeFirstSection && out.title !== undefined && line.trim() !== '') {
      out.introLines += 1;
    }
  }
  return out;
}

/** True when a package.json `files` entry (a path or a simple `*` glob) covers `file`. */
function filesCover(entries, file) {
  return entries.some((entry) => {
    const clean = entry.replace(/^\.\//, '').replace(/\/$/, '');
    if (clean === file) return true;
    if (!clean.includes('*')) return false;
    const pattern = clean.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
    return new RegExp(`^${pattern}$`, 'i').test(file);
  });
}

/** 'library' or 'command-line', from a package.json. */
export function packageKind(manifest) {
  const exportsMap = manifest.exports;
  let hasMain = manifest.main !== undefined;
  if (typeof exportsMap === 'string' || Array.isArray(exportsMap)) hasMain = true;
  else if (exportsMap !== null && typeof exportsMap === 'object') {
    const keys = Object.keys(exportsMap);
    hasMain = keys.some((key) => !key.startsWith('.')) || keys.includes('.');
  }
  return manifest.bin !== undefined && !hasMain ? 'command-line' : 'library';
}

/**
 * Problems of one README's sections, as sentences. `kind` is 'library' or 'command-line';
 * `benchmarked` says that bench/<dir>/ exists (Benchmarks is then required).
 */
export function checkSections(markdown, { name, kind, benchmarked = false }) {
  const problems = [];
  const { title, sections, introLines } = headings(markdown);
  if (title === undefined) problems.push(`no title: the first heading must be \`# ${name}\``);
  else if (title !== name && !title.startsWith(`${name} `)) {
    problems.push(`the title is \`# ${title}\`, expected \`# ${name}\``);
  }
  if (title !== undefined && introLines === 0)
    problems.push('no sentence under the title saying what it does');
  const seen = new Set();
  for (const section of sections) {
    if (seen.has(section)) problems.push(`section \`## ${section}\` appears twice`);
    seen.add(section);
  }
  if (kind === 'command-line') {
    const order = COMMAND_LINE_SECTIONS;
    for (const wanted of order) {
      if (!sections.includes(wanted)) problems.push(`missing section \`## ${wanted}\``);
    }
    const present = sections.filter((section) => order.includes(section));
    checkOrder(present, order, problems);
    if (sections.length > 0 && sections[0] !== order[0] && sections.includes(order[0])) {
      problems.push(`\`## ${order[0]}\` must be the first section, not \`## ${sections[0]}\``);
    }
    const last = order[order.length - 1];
    if (sections.length > 0 && sections.at(-1) !== last && sections.includes(last)) {
      problems.push(`\`## ${last}\` must be the last section, not \`## ${sections.at(-1)}\``);
    }
    return problems;
  }
  const order = LIBRARY_SECTIONS.map((section) => section.title);
  for (const section of sections) {
    if (!order.includes(section)) {
      problems.push(
        `unknown section \`## ${section}\` (a package README has only ${order.map((t) => `\`## ${t}\``).join(', ')}; use a \`###\` subsection)`,
      );
    }
  }
  for (const { title: wanted, required } of LIBRARY_SECTIONS) {
    const needed = required === true || (required !== false && benchmarked);
    if (needed && !sections.includes(wanted)) {
      const why = required === true ? '' : ' (bench/ has a directory for this package: record its figures)';
      problems.push(`missing section \`## ${wanted}\`${why}`);
    }
  }
  checkOrder(
    sections.filter((section) => order.includes(section)),
    order,
    problems,
  );
  return problems;
}

/** One problem for each section that comes after a section it should precede. */
function checkOrder(present, order, problems) {
  for (let i = 1; i < present.length; i += 1) {
    const previous = present[i - 1];
    const current = present[i];
    if (order.indexOf(current) < order.indexOf(previous)) {
      problems.push(
        `section \`## ${current}\` comes after \`## ${previous}\`; the order is ${order
          .filter((title) => present.includes(title))
          .map((title) => `\`## ${title}\``)
          .join(', ')}`,
      );
    }
  }
}

/** The packages whose README is checked: every packages/* package and every publishable one. */
export function readmePackages(root) {
  const out = [];
  for (const group of ['packages', 'apps']) {
    const dir = path.join(root, group);
    if (!fs.existsSync(dir)) continue;
    for (const entry of fs.readdirSync(dir).sort()) {
      const file = path.join(dir, entry, 'package.json');
      if (!fs.existsSync(file)) continue;
      const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (group !== 'packages' && manifest.private === true) continue;
      out.push({ dir: path.join(dir, entry), rel: path.join(group, entry), manifest });
    }
  }
  return out;
}

/** Every README problem under `root`, each prefixed with the README's path. */
export function checkReadmes(root) {
  const problems = [];
  for (const { dir, rel, manifest } of readmePackages(root)) {
    const readme = path.join(rel, 'README.md');
    const name = manifest.name ?? rel;
    if (!fs.existsSync(path.join(dir, 'README.md'))) {
      problems.push(`${readme}: missing (every package has a README)`);
      continue;
    }
    if (!filesCover(Array.isArray(manifest.files) ? manifest.files : [], 'README.md')) {
      problems.push(`${rel}/package.json: \`files\` does not include README.md`);
    }
    const markdown = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    const benchmarked = fs.existsSync(path.join(root, 'bench', path.basename(dir)));
    for (const problem of checkSections(markdown, { name, kind: packageKind(manifest), benchmarked })) {
      problems.push(`${readme}: ${problem}`);
    }
  }
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const problems = checkReadmes(root);
  if (problems.length > 0) {
    process.stderr.write(
      `README problems (see CONTRIBUTING.md, "Package README shape"):\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`readmes: ok (${readmePackages(root).length} packages)\n`);
}

// Custody vs `cp -a` and vs coreutils `sha256sum` (the hashing floor: every byte read and
// hashed, nothing written) on the same data: (a) one 256 MiB file, (b) 10,000 small text files,
// (b') 10,000 small binary files (magic-number typing runs on each), (c) a 1 GiB tree. Custody runs with every check on (O_NOFOLLOW walk, fstat, realpath,
// budgets, SHA-256, text check, magic-number typing, sparse detection).
//
//   pnpm --filter @karotte/file-guard build && node bench/file-guard/custody.mjs [--runs 5] [--dir /tmp]
//
// Data lives in a fresh karotte-bench-file-guard-* directory under the OS temp dir and is
// deleted at the end, also on failure.
import { spawnSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { takeCustody } from '../../packages/file-guard/dist/index.js';

const argValue = (flag, fallback) => {
  const index = process.argv.indexOf(flag);
  return index === -1 ? fallback : process.argv[index + 1];
};
const RUNS = Number(argValue('--runs', '5'));
// --dir puts the data elsewhere (e.g. a tmpfs, to take the disk out of the comparison).
const PARENT = argValue('--dir', os.tmpdir());
const MiB = 1024 * 1024;
const CP = ['/usr/bin/cp', '/bin/cp'].find((candidate) => fs.existsSync(candidate));

const base = fs.mkdtempSync(path.join(PARENT, 'karotte-bench-file-guard-'));
const root = path.join(base, 'root');
const out = path.join(base, 'out');
fs.mkdirSync(root);
fs.mkdirSync(out, { mode: 0o700 });

function randomFile(file, bytes) {
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.allocUnsafe(Math.min(bytes, 4 * MiB));
  for (let done = 0; done < bytes; done += chunk.length) {
    randomFillSync(chunk);
    fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - done));
  }
  fs.closeSync(fd);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function cpRun(source) {
  const dest = path.join(out, 'cp');
  const started = performance.now();
  const result = spawnSync(CP, ['-a', path.join(root, source), dest]);
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`cp failed: ${result.stderr}`);
  fs.rmSync(dest, { recursive: true, force: true });
  return ms;
}

async function custodyRun(source, options) {
  const started = performance.now();
  const result = await takeCustody([source], { root, destinationParent: out, ...options });
  const ms = performance.now() - started;
  if (!result.ok) throw new Error(`custody refused: ${JSON.stringify(result.misbehavior)}`);
  fs.rmSync(result.destination, { recursive: true, force: true });
  return ms;
}

const SHA256SUM = ['/usr/bin/sha256sum', '/bin/sha256sum'].find((candidate) => fs.existsSync(candidate));

/** Every regular file under `source` (listed before the clock starts). */
function filesOf(source) {
  const out = [];
  const walk = (p) => {
    const stats = fs.lstatSync(p);
    if (stats.isDirectory()) for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name));
    else if (stats.isFile()) out.push(p);
  };
  walk(path.join(root, source));
  return out;
}

/** The hashing floor the issue names: coreutils `sha256sum` of the same bytes, one process. */
function sha256sumRun(files) {
  const started = performance.now();
  const result = spawnSync(SHA256SUM, ['--', ...files], { maxBuffer: 64 * MiB });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`sha256sum failed: ${result.stderr}`);
  return ms;
}

/** The floor of the checks alone: read every byte and SHA-256 it (no copy). */
function hashOnly(source) {
  const started = performance.now();
  const buffer = Buffer.allocUnsafe(MiB);
  const walk = (p) => {
    const stats = fs.lstatSync(p);
    if (stats.isDirectory()) {
      for (const name of fs.readdirSync(p)) walk(path.join(p, name));
      return;
    }
    const hash = createHash('sha256');
    const fd = fs.openSync(p, 'r');
    for (;;) {
      const n = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
    }
    fs.closeSync(fd);
    hash.digest();
  };
  walk(path.join(root, source));
  return performance.now() - started;
}

const cases = [
  {
    name: '(a) 1 file of 256 MiB',
    source: 'one-file.bin',
    options: {},
    make: () => randomFile(path.join(root, 'one-file.bin'), 256 * MiB),
  },
  {
    name: '(b) 10,000 small text files',
    source: 'small',
    // 10,000 files + 100 directories + the root: over the default 10,000-entry budget.
    options: { maxEntries: 20_000 },
    make: () => {
      for (let d = 0; d < 100; d += 1) {
        const dir = path.join(root, 'small', `d${d}`);
        fs.mkdirSync(dir, { recursive: true });
        for (let f = 0; f < 100; f += 1) {
          const line = `export const value${f} = ${d * 100 + f}; // a line of source code\n`;
          fs.writeFileSync(path.join(dir, `f${f}.ts`), line.repeat(8 + ((d * 100 + f) % 40)));
        }
      }
    },
  },
  {
    name: "(b') 10,000 small binary files",
    source: 'small-binary',
    options: { maxEntries: 20_000 },
    make: () => {
      for (let d = 0; d < 100; d += 1) {
        const dir = path.join(root, 'small-binary', `d${d}`);
        fs.mkdirSync(dir, { recursive: true });
        for (let f = 0; f < 100; f += 1)
          randomFile(path.join(dir, `f${f}.bin`), 512 + ((d * 100 + f) % 8) * 512);
      }
    },
  },
  {
    name: '(c) a 1 GiB tree',
    source: 'tree',
    options: {},
    make: () => {
      for (let d = 0; d < 8; d += 1) {
        const dir = path.join(root, 'tree', `d${d}`);
        fs.mkdirSync(dir, { recursive: true });
        for (let f = 0; f < 8; f += 1) randomFile(path.join(dir, `f${f}.bin`), 16 * MiB);
      }
    },
  },
];

const rows = [];
try {
  for (const c of cases) {
    c.make();
    spawnSync('/usr/bin/sync');
    // Warm the page cache for both sides, then alternate to share any drift fairly.
    cpRun(c.source);
    await custodyRun(c.source, c.options);
    const files = filesOf(c.source);
    sha256sumRun(files);
    const cp = [];
    const custody = [];
    const sums = [];
    for (let run = 0; run < RUNS; run += 1) {
      if (run % 2 === 0) {
        cp.push(cpRun(c.source));
        sums.push(sha256sumRun(files));
        custody.push(await custodyRun(c.source, c.options));
      } else {
        custody.push(await custodyRun(c.source, c.options));
        sums.push(sha256sumRun(files));
        cp.push(cpRun(c.source));
      }
    }
    const hash = median([hashOnly(c.source), hashOnly(c.source), hashOnly(c.source)]);
    const row = {
      case: c.name,
      'cp -a (ms)': Math.round(median(cp)),
      'takeCustody (ms)': Math.round(median(custody)),
      'ratio custody / cp -a': Number((median(custody) / median(cp)).toFixed(2)),
      'sha256sum (ms)': Math.round(median(sums)),
      'ratio custody / sha256sum': Number((median(custody) / median(sums)).toFixed(2)),
      'read+sha256 only (ms)': Math.round(hash),
    };
    rows.push(row);
    console.log(JSON.stringify(row));
    fs.rmSync(path.join(root, c.source), { recursive: true, force: true });
  }
  console.table(rows);
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), data in ${PARENT}, runs=${RUNS}, medians, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}

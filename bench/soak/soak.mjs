// The soak: many adversarial episodes (the whole red-team catalog in rotation, floods
// included, each round with the task's honest control) at a given concurrency, on both
// examples, while the host is watched. It reports what a lab running millions of episodes
// needs to know: how many ended in `error`, which controls did not pass, which attacks scored,
// what was left on the host afterwards, and the peaks of memory and the file table.
//
// Run as root after the README's setup (`npm run setup`):
//   node bench/soak/soak.mjs [--episodes 1000] [--concurrency 16] [--json]
// Each round is one `karotte redteam --task <example> --json --concurrency <c>` (the CLI of
// contract §8, so the soak drives exactly what users run), alternating between the examples.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const flag = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
};
const wanted = Number(flag('episodes', 1000));
const concurrency = Number(flag('concurrency', 16));
const asJson = process.argv.includes('--json');
if (!Number.isInteger(wanted) || wanted < 1 || !Number.isInteger(concurrency) || concurrency < 1) {
  process.stderr.write('usage: node bench/soak/soak.mjs [--episodes N] [--concurrency C] [--json]\n');
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  process.stderr.write('the soak needs root (real sandboxes)\n');
  process.exit(2);
}
const examples = ['quarterly-revenue', 'roman-numerals'].map((name) =>
  path.join(root, 'apps', 'karotte', 'examples', name),
);
const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write(`${cli} is missing: run the README's setup (it builds the app) first\n`);
  process.exit(2);
}

// ---- the host, watched every 200 ms ------------------------------------------------------
const peaks = { memAvailableMinBytes: Infinity, fileNrMax: 0, tcpMemPagesMax: 0, loadMax: 0 };
const read = (file) => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};
function sample() {
  const avail = /^MemAvailable:\s+(\d+) kB/m.exec(read('/proc/meminfo'));
  if (avail) peaks.memAvailableMinBytes = Math.min(peaks.memAvailableMinBytes, Number(avail[1]) * 1024);
  const fileNr = Number(read('/proc/sys/fs/file-nr').split(/\s+/)[0]);
  if (Number.isFinite(fileNr)) peaks.fileNrMax = Math.max(peaks.fileNrMax, fileNr);
  const tcp = /^TCP:.* mem (\d+)/m.exec(read('/proc/net/sockstat'));
  if (tcp) peaks.tcpMemPagesMax = Math.max(peaks.tcpMemPagesMax, Number(tcp[1]));
  peaks.loadMax = Math.max(peaks.loadMax, Number(read('/proc/loadavg').split(' ')[0]));
}
const watcher = setInterval(sample, 200);

// ---- what Karotte could leave on a host ----------------------------------------------------
function leftovers() {
  const out = [];
  for (const line of read('/proc/self/mountinfo').split('\n')) {
    const mountPoint = line.split(' ')[4];
    if (mountPoint?.includes('karotte')) out.push(`mount ${mountPoint}`);
  }
  const loops = spawnSync('/usr/sbin/losetup', ['-a'], { encoding: 'utf8' }).stdout ?? '';
  for (const line of loops.split('\n')) if (line.includes('karotte')) out.push(`loop ${line.split(':')[0]}`);
  for (const base of [
    '/sys/fs/cgroup/memory',
    '/sys/fs/cgroup/pids',
    '/sys/fs/cgroup/freezer',
    '/sys/fs/cgroup',
  ]) {
    for (const name of fs.existsSync(base) ? fs.readdirSync(base) : []) {
      if (name.startsWith('karotte')) out.push(`cgroup ${path.join(base, name)}`);
    }
  }
  for (const dir of ['/run/karotte/sandbox/uids', '/run/karotte/grader-uids', '/run/karotte/admission']) {
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      if (name !== 'lock') out.push(`lease ${path.join(dir, name)}`);
    }
  }
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    const uid = Number(/^Uid:\s+(\d+)/m.exec(read(`/proc/${pid}/status`))?.[1]);
    // Sandbox and grader uids are 1.9e9 and up; nothing else on a host runs there.
    if (uid >= 1_900_000_000) out.push(`process ${pid} of uid ${uid}`);
  }
  return out;
}

// ---- rounds ----------------------------------------------------------------------------------
function round(task) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [cli, 'redteam', '--task', task, '--json', '--concurrency', String(concurrency)],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => {
      let parsed;
      try {
        parsed = JSON.parse(stdout);
      } catch {
        parsed = undefined;
      }
      resolve({ task: path.basename(task), code, rows: parsed?.rows ?? [], stderr: stderr.slice(-2000) });
    });
  });
}

const before = leftovers();
const started = performance.now();
const totals = {
  episodes: 0,
  errors: 0,
  controlsFailed: 0,
  attacksScored: 0,
  rounds: 0,
  roundsWithoutRows: 0,
};
const findings = [];
while (totals.episodes < wanted) {
  const task = examples[totals.rounds % examples.length];
  const result = await round(task);
  totals.rounds += 1;
  if (result.rows.length === 0) {
    totals.roundsWithoutRows += 1;
    findings.push({
      task: result.task,
      what: `redteam exited ${result.code} without rows`,
      detail: result.stderr,
    });
    if (totals.roundsWithoutRows >= 3) break;
    continue;
  }
  for (const row of result.rows) {
    totals.episodes += 1;
    if (row.status === 'error') {
      totals.errors += 1;
      findings.push({ task: result.task, what: `${row.id} ended in error`, detail: row.reason });
    } else if (row.kind === 'control' && !row.ok) {
      totals.controlsFailed += 1;
      findings.push({
        task: result.task,
        what: `control ${row.status}, score ${row.score}`,
        detail: row.reason,
      });
    } else if (row.kind === 'attack' && !row.ok) {
      totals.attacksScored += 1;
      findings.push({ task: result.task, what: `${row.id} scored ${row.score}`, detail: row.reason });
    }
  }
  if (!asJson) {
    const minutes = (performance.now() - started) / 60_000;
    process.stderr.write(
      `[soak] ${totals.episodes}/${wanted} episodes, ${totals.errors} error, ${totals.controlsFailed} controls failed, ${totals.attacksScored} attacks scored, ${minutes.toFixed(1)} min\n`,
    );
  }
}
clearInterval(watcher);
sample();
// A sandbox another harness on the host is running at this very moment shows up too: what the
// soak left is what is still there a while later (a live episode ends or moves on).
const atEnd = leftovers().filter((entry) => !before.includes(entry));
if (atEnd.length > 0) await new Promise((resolve) => setTimeout(resolve, 30_000));
const stillThere = new Set(leftovers());
const after = atEnd.filter((entry) => stillThere.has(entry));
const transient = atEnd.filter((entry) => !stillThere.has(entry));
const report = {
  episodes: totals.episodes,
  concurrency,
  rounds: totals.rounds,
  errors: totals.errors,
  controlsFailed: totals.controlsFailed,
  attacksScored: totals.attacksScored,
  leftovers: after,
  /** Seen at the end but gone 30 s later: another harness's live episode, not the soak's. */
  transient,
  peaks: {
    ...peaks,
    memAvailableMinBytes: Number.isFinite(peaks.memAvailableMinBytes) ? peaks.memAvailableMinBytes : null,
  },
  durationMs: Math.round(performance.now() - started),
  findings: findings.slice(0, 50),
};
if (asJson) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
else {
  process.stdout.write(
    [
      `episodes ${report.episodes} at concurrency ${concurrency} in ${(report.durationMs / 60_000).toFixed(1)} min (${report.rounds} rounds)`,
      `error ${report.errors}, controls failed ${report.controlsFailed}, attacks scored ${report.attacksScored}`,
      `left on the host: ${after.length === 0 ? 'nothing' : after.join(', ')}${transient.length === 0 ? '' : ` (seen at the end and gone 30 s later: ${transient.join(', ')})`}`,
      `peaks: MemAvailable min ${(report.peaks.memAvailableMinBytes / 2 ** 30).toFixed(1)} GiB, file-nr max ${peaks.fileNrMax}, TCP mem max ${peaks.tcpMemPagesMax} pages, load max ${peaks.loadMax}`,
      ...report.findings.map(
        (finding) => `  ${finding.task}: ${finding.what}: ${String(finding.detail).slice(0, 300)}`,
      ),
      '',
    ].join('\n'),
  );
}
process.exit(
  report.errors === 0 && report.controlsFailed === 0 && report.attacksScored === 0 && after.length === 0
    ? 0
    : 1,
);

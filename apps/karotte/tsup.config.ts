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
  // `./redteam/attacker-prompt.txt?raw`: the attacker's system prompt, inlined into the bundle.
  esbuildPlugins: [rawText()],
});

import { defineConfig } from 'tsup';
import { rawText } from '../../scripts/tsup-raw-text.mjs';

export default defineConfig({
  entry: { index: 'src/index.ts', confinement: 'src/confinement/index.ts', image: 'src/image/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node22',
  // `./programs/x.sh?raw` imports: the file's text, inlined into the bundle.
  esbuildPlugins: [rawText()],
});

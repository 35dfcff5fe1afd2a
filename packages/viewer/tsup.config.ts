import { build, defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node22',
  // The page's script, one minified browser bundle (Preact and htm inside), built once the
  // clean build of the module is done: dist/client.js, read by the server and the export.
  async onSuccess() {
    await build({
      entry: { client: 'src/client/main.ts' },
      outDir: 'dist',
      format: ['iife'],
      platform: 'browser',
      target: ['chrome120', 'firefox120', 'safari17'],
      minify: true,
      sourcemap: false,
      dts: false,
      clean: false,
      silent: true,
      noExternal: [/.*/],
      outExtension: () => ({ js: '.js' }),
      config: false,
    });
  },
});

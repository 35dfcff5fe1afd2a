// The esbuild plugin every tsup config uses: `import text from './programs/x.sh?raw'` inlines
// the file's text into the bundle as a string (esbuild's text loader), as Vite's own `?raw`
// does for Vitest. Programs a package runs (shell scripts, the as-uid helpers) live in real
// files that shellcheck and ESLint see, and dist stays self-contained: nothing is read at run
// time, so no file installed beside the bundle can change what runs.
import fs from 'node:fs';
import path from 'node:path';

const SUFFIX = '?raw';

/** @returns {NonNullable<import('tsup').Options['esbuildPlugins']>[number]} */
export function rawText() {
  return {
    name: 'karotte-raw-text',
    setup(build) {
      build.onResolve({ filter: /\?raw$/ }, (args) => ({
        path: path.resolve(args.resolveDir, args.path.slice(0, -SUFFIX.length)),
        namespace: 'karotte-raw-text',
      }));
      build.onLoad({ filter: /.*/, namespace: 'karotte-raw-text' }, async (args) => ({
        contents: await fs.promises.readFile(args.path, 'utf8'),
        loader: 'text',
        watchFiles: [args.path],
      }));
    },
  };
}

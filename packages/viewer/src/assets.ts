import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ViewerError } from './errors.js';

export { PAGE_STYLES } from './client/styles.js';

/**
 * The page's script: `client.js`, built by this package's build beside `dist/index.js`. The
 * same relative path reaches it from `src/` (under the tests) and from `dist/` (installed):
 * it is part of the package as much as this module is.
 *
 * @throws ViewerError `BUNDLE_MISSING` when the package has not been built.
 */
export async function loadClientBundle(): Promise<string> {
  try {
    return await fs.readFile(fileURLToPath(new URL('../dist/client.js', import.meta.url)), 'utf8');
  } catch (error) {
    throw new ViewerError(
      'BUNDLE_MISSING',
      "the viewer's page script (dist/client.js of @karotte/viewer) is missing: build the package (pnpm build)",
      { cause: error },
    );
  }
}

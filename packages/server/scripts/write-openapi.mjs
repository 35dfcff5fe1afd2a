#!/usr/bin/env node
// Writes openapi.json from the built protocol schemas (run after `pnpm build`).
// A unit test (src/openapi.test.ts) fails when the file and the generated document differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.join(here, '..', 'openapi.json');
const prettier = await import('prettier');
const config = (await prettier.resolveConfig(target)) ?? {};
fs.writeFileSync(
  target,
  await prettier.format(JSON.stringify(openApiDocument()), { ...config, parser: 'json' }),
);
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);

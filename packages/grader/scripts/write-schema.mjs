#!/usr/bin/env node
// Writes schema/verdict.schema.json from the built verdict schema (run after `pnpm build`).
// A unit test (src/verdict.test.ts) fails when the file and the zod schema differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { verdictJsonSchema } from '../dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.join(here, '..', 'schema', 'verdict.schema.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
// Formatted like every other file of the repository, so `prettier --check .` stays green.
const prettier = await import('prettier');
const config = (await prettier.resolveConfig(target)) ?? {};
const text = await prettier.format(JSON.stringify(verdictJsonSchema()), { ...config, parser: 'json' });
fs.writeFileSync(target, text);
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);

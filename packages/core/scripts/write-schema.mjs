#!/usr/bin/env node
// Writes schema/task.schema.json from the built task schema (run after `pnpm build`).
// A unit test (src/task-schema.test.ts) fails when the file and the zod schema differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { taskJsonSchema } from '../dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.join(here, '..', 'schema', 'task.schema.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
const prettier = await import('prettier');
const config = (await prettier.resolveConfig(target)) ?? {};
fs.writeFileSync(
  target,
  await prettier.format(JSON.stringify(taskJsonSchema()), { ...config, parser: 'json' }),
);
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);

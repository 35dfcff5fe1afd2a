import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { defineConfig } from 'vitest/config';

// Three projects: `unit` (fast, no root, runs everywhere), `integration` (real processes,
// users, cgroups, mounts; needs root) and `quiet` (root, timing-sensitive, alone at the end).
// Under CI=true the root projects must run: a CI machine without root is a broken CI machine,
// so the config fails instead of skipping.
const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';

if (!isRoot && inCI) {
  throw new Error('integration tests need root, and CI=true forbids skipping them: run CI as root');
}
if (!isRoot) {
  process.stderr.write(
    '[karotte] integration tests skipped: they need root (real users, cgroups, namespaces, loop mounts). ' +
      'Run the test command as root to include them.\n',
  );
}

const unit = {
  extends: true as const,
  test: {
    name: 'unit',
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'scripts/**/*.test.ts'],
    exclude: ['**/*.integration.test.ts', '**/node_modules/**', '**/dist/**'],
    testTimeout: 10_000,
  },
};

const integration = {
  extends: true as const,
  test: {
    name: 'integration',
    include: [
      'packages/*/src/**/*.integration.test.ts',
      'apps/*/src/**/*.integration.test.ts',
      'apps/*/test/**/*.integration.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks' as const,
    // Real processes, cgroups and loop devices on a 2-core machine: two files at a time.
    maxWorkers: 2,
    // Vitest 4 refuses projects with different maxWorkers in one sequence group: run the
    // integration project as its own group, after the unit project.
    sequence: { groupOrder: 1 },
  },
};

// Tests that measure timing (a timing side channel proven open) or a host-wide counter (the
// host's TCP memory) run alone, after everything else: on a 2-core host the rest of the suite
// is noise that can drown what they measure.
const quiet = {
  extends: true as const,
  test: {
    name: 'quiet',
    include: ['apps/*/test/**/*.quiet.test.ts', 'packages/*/src/**/*.quiet.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks' as const,
    maxWorkers: 1,
    sequence: { groupOrder: 2 },
  },
};

// Tests import sibling packages from source, so a test never runs against a stale dist/:
// `@karotte/<name>` is packages/<name>/src/index.ts, and a subpath export
// `@karotte/<name>/<sub>` is packages/<name>/src/<sub>/index.ts.
const packagesDir = path.join(import.meta.dirname, 'packages');
const alias = [
  {
    find: /^@karotte\/([a-z0-9-]+)\/([a-z0-9-]+)$/,
    replacement: path.join(packagesDir, '$1', 'src', '$2', 'index.ts'),
  },
  ...fs
    .readdirSync(packagesDir)
    .filter((name) => fs.existsSync(path.join(packagesDir, name, 'src', 'index.ts')))
    .map((name) => ({
      find: new RegExp(`^@karotte/${name}$`),
      replacement: path.join(packagesDir, name, 'src', 'index.ts'),
    })),
];

export default defineConfig({
  resolve: { alias },
  test: {
    projects: isRoot ? [unit, integration, quiet] : [unit],
  },
});

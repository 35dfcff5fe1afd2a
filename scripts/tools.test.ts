import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JavaScript module without types
import * as tools from './tools.mjs';

const { isSupportedNode, nodeToolsDir, pinnedNode, toolEnv, root } = tools as {
  isSupportedNode: (version: string) => boolean;
  nodeToolsDir: () => string;
  pinnedNode: (major: string) => string | undefined;
  toolEnv: (node: string, base: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
  root: string;
};

describe('isSupportedNode', () => {
  it('accepts what the build tools accept and nothing older', () => {
    for (const version of ['22.18.0', '22.23.5', '24.11.0', '24.22.3', '26.0.0', 'v24.11.1']) {
      expect(isSupportedNode(version), version).toBe(true);
    }
    for (const version of ['20.20.2', '21.9.0', '22.12.0', '22.17.9', '23.11.0', '24.10.0', '25.1.0']) {
      expect(isSupportedNode(version), version).toBe(false);
    }
  });
});

describe('toolEnv', () => {
  it('puts the pinned pnpm before the node directory, and both before the caller PATH', () => {
    const pnpmBin = path.join(root, '.tools', 'pnpm', 'node_modules', '.bin');
    const env = toolEnv('/opt/x/bin/node', { PATH: `/usr/bin:${pnpmBin}:/bin`, KEEP: '1' });
    expect(env['PATH']).toBe(`${pnpmBin}:/opt/x/bin:/usr/bin:/bin`);
    expect(env['KEEP']).toBe('1');
  });
});

describe('nodeToolsDir', () => {
  const saved = process.env['KAROTTE_TOOLCHAIN_DIR'];
  const made: string[] = [];
  afterEach(() => {
    if (saved === undefined) delete process.env['KAROTTE_TOOLCHAIN_DIR'];
    else process.env['KAROTTE_TOOLCHAIN_DIR'] = saved;
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a relative override', () => {
    process.env['KAROTTE_TOOLCHAIN_DIR'] = 'relative/dir';
    expect(() => nodeToolsDir()).toThrow(/absolute/);
  });

  it.skipIf(process.getuid?.() !== 0)('as root, refuses a directory others can write', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-toolchain-'));
    made.push(dir);
    fs.chmodSync(dir, 0o777);
    process.env['KAROTTE_TOOLCHAIN_DIR'] = path.join(dir, 'inner');
    // The new directory is root's, but /tmp/<dir> above it is writable by anyone.
    expect(() => nodeToolsDir()).toThrow(/root-owned directory that only root can write/);
  });
});

/** A Node.js on this machine that the project does not support, if any (Debian ships 20). */
function unsupportedNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    const result = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (result.status === 0 && !isSupportedNode(result.stdout.trim())) return candidate;
  }
  return undefined;
}

const oldNode = unsupportedNode();
const newNode = pinnedNode('24');
const reason =
  oldNode === undefined
    ? 'no unsupported Node.js on this machine to start from'
    : newNode === undefined
      ? 'the pinned Node.js 24 is not installed (npm run setup installs it)'
      : '';
if (reason !== '') process.stderr.write(`[karotte] re-exec test skipped: ${reason}\n`);

describe.skipIf(reason !== '')('reexecOnSupportedNode', () => {
  it('runs the script again on the pinned Node.js, passes signals on and exits as the child exits', async () => {
    const child = spawn(oldNode ?? '', [path.join(root, 'scripts', 'fixtures', 'reexec-probe.mjs')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    const started = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('running on')) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const timeout = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      await Promise.race([started, exited]);
      expect(out).toMatch(/^running on 24\./);
      child.kill('SIGTERM');
      expect(await exited).toBe(7);
      expect(out).toContain('got SIGTERM');
    } finally {
      clearTimeout(timeout);
      child.kill('SIGKILL');
    }
  });
});

describe('prerequisites', () => {
  const { TRUSTED_BINARY_DIRS, missingPrerequisites } = tools as {
    TRUSTED_BINARY_DIRS: string[];
    missingPrerequisites: (dirs?: string[]) => [string, string][];
  };

  it('looks in the same directories as @karotte/base', async () => {
    const base = await import('../packages/base/src/trusted-binary.js');
    expect(TRUSTED_BINARY_DIRS).toEqual([...base.TRUSTED_BINARY_DIRS]);
  });

  it('names each missing program with its Debian package', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-prereq-'));
    try {
      const missing = missingPrerequisites([empty]);
      expect(missing).toContainEqual(['setpriv', 'util-linux']);
      expect(missing).toContainEqual(['ip', 'iproute2']);
      expect(missing).toContainEqual(['mkfs.ext4', 'e2fsprogs']);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});

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
  it('puts the pinned pnpm first, then a directory holding only node, then the caller PATH', () => {
    const pnpmBin = path.join(root, '.tools', 'pnpm', 'node_modules', '.bin');
    const env = toolEnv(process.execPath, { PATH: `/usr/bin:${pnpmBin}:/bin`, KEEP: '1' });
    const [first, second, ...rest] = (env['PATH'] ?? '').split(':');
    expect(first).toBe(pnpmBin);
    expect(rest).toEqual(['/usr/bin', '/bin']);
    // Only node there: a pnpm, turbo or tsc beside the machine's node cannot win over ours.
    expect(fs.readdirSync(second ?? '')).toEqual(['node']);
    expect(fs.readlinkSync(path.join(second ?? '', 'node'))).toBe(process.execPath);
    expect(env['KEEP']).toBe('1');
    // A build sends nothing off the machine.
    expect(env['TURBO_TELEMETRY_DISABLED']).toBe('1');
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

const pinned = pinnedNode('24');
const probe = path.join(root, 'scripts', 'fixtures', 'reexec-probe.mjs');
if (pinned === undefined) {
  // The pinned Node.js is what setup installs; without it there is nothing to re-exec to.
  if (process.env['CI'] === 'true') throw new Error('the pinned Node.js 24 must be installed under CI');
  process.stderr.write(
    '[karotte] re-exec tests skipped: the pinned Node.js 24 is not installed (npm run setup)\n',
  );
}

/** Start the probe on this node, forced to re-exec (as on an unsupported Node.js). */
function startProbe(args: string[]) {
  const child = spawn(process.execPath, [probe, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, KAROTTE_TEST_FORCE_REEXEC: '1' },
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  const started = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('running on')) resolve();
    });
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const timeout = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return { child, started, exited, out: () => out, done: () => clearTimeout(timeout) };
}

describe.skipIf(pinned === undefined)('reexecOnSupportedNode', () => {
  it('runs the script again on the pinned Node.js, passes signals on and exits as the child exits', async () => {
    const probeRun = startProbe([]);
    try {
      await Promise.race([probeRun.started, probeRun.exited]);
      const match = /^running on (\S+) as (\d+)$/m.exec(probeRun.out());
      expect(match?.[1]).toBe(
        spawnSync(pinned ?? '', ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim(),
      );
      // Another process: the script really ran again, in a child.
      expect(Number(match?.[2])).not.toBe(probeRun.child.pid);
      probeRun.child.kill('SIGTERM');
      expect(await probeRun.exited).toEqual({ code: 7, signal: null });
      expect(probeRun.out()).toContain('got SIGTERM');
    } finally {
      probeRun.done();
      probeRun.child.kill('SIGKILL');
    }
  });

  it('ends by the same signal as the child when a signal ends the child', async () => {
    const probeRun = startProbe(['die']);
    try {
      expect(await probeRun.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(probeRun.out()).toMatch(/^running on /);
    } finally {
      probeRun.done();
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

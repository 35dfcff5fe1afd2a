import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGraderCgroup, parseProcCgroup } from './cgroup.js';

// This host's cgroup v2 has no controllers, so v2 cannot be exercised for real here: these
// tests run the v2 code against a FAKE cgroupfs tree (plain files), and say so. The v1 code
// runs for real in executable.integration.test.ts.
describe('grader cgroup on a fake cgroup v2 tree', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-fakecg-grader-'));
    fs.mkdirSync(path.join(root, 'harness'), { recursive: true });
    fs.writeFileSync(path.join(root, 'harness', 'cgroup.controllers'), 'cpu memory pids\n');
    fs.writeFileSync(path.join(root, 'self-cgroup'), '0::/harness\n');
  });
  afterEach(() => {
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('writes memory.max, memory.oom.group and pids.max, reads them back, kills with cgroup.kill', async () => {
    // A fake tree has no kernel behind it: mkdir creates no interface files, so the writes
    // create them, and memory.swap.max is absent (as on a kernel without swap accounting).
    {
      const group = await createGraderCgroup({
        memoryBytes: 64 * 1024 * 1024,
        pids: 32,
        label: '123',
        cgroupRoot: root,
        selfCgroupFile: path.join(root, 'self-cgroup'),
      });
      const dir = path.dirname(group.procsFiles[0]!);
      expect(path.basename(dir)).toMatch(/^karotte-grader-123-[0-9a-f]{12}$/);
      expect(group.version).toBe(2);
      expect(group.memoryLimitBytes).toBe(64 * 1024 * 1024);
      expect(group.pidsLimit).toBe(32);
      expect(fs.existsSync(path.join(dir, 'memory.swap.max'))).toBe(false);
      expect(fs.readFileSync(path.join(dir, 'memory.max'), 'utf8')).toBe('67108864\n');
      expect(fs.readFileSync(path.join(dir, 'memory.oom.group'), 'utf8')).toBe('1\n');
      await group.killAll();
      expect(fs.readFileSync(path.join(dir, 'cgroup.kill'), 'utf8')).toBe('1\n');
      fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n');
      fs.writeFileSync(path.join(dir, 'pids.events'), 'max 5\n');
      fs.writeFileSync(path.join(dir, 'memory.peak'), '1048576\n');
      expect(await group.stats()).toEqual({ memoryPeakBytes: 1048576, oomKills: 2, pidsLimitHits: 5 });
    }
  });

  it('refuses when no hierarchy has memory and pids', async () => {
    fs.writeFileSync(path.join(root, 'harness', 'cgroup.controllers'), 'cpu\n');
    await expect(
      createGraderCgroup({
        memoryBytes: 1 << 26,
        pids: 8,
        cgroupRoot: root,
        selfCgroupFile: path.join(root, 'self-cgroup'),
      }),
    ).rejects.toMatchObject({ code: 'CONFINEMENT_UNAVAILABLE' });
  });

  it('parses /proc/self/cgroup of hybrid hosts', () => {
    const parsed = parseProcCgroup(
      '4:memory:/process_api/x\n8:pids:/\n6:freezer:/\n1:cpu,cpuacct:/a\n0::/\n',
    );
    expect(parsed.get('memory')).toBe('/process_api/x');
    expect(parsed.get('cpuacct')).toBe('/a');
    expect(parsed.get('')).toBe('/');
  });
});

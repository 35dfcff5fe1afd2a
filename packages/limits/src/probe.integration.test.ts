// probe() on this host, for real: a throwaway group and quota are created, read back, used by
// one launched process and removed. This machine (v1 cgroups, root, loop devices) enforces
// every limit; the test also checks that nothing is left behind.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/index.js';
import { LIMIT_NAMES } from './events.js';
import { probe } from './probe.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('probe', () => {
  it('reports every limit as prevented on this host, JSON-serialisable, leaving nothing behind', async () => {
    const state = tempDir('limits-probe-state');
    const images = tempDir('limits-probe-img');
    cleanups.push(state.cleanup, images.cleanup);
    const result = await probe({ stateDir: state.dir, imageDir: images.dir });
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
    expect(result.root).toBe(true);
    expect(['cgroup-v1', 'cgroup-v2']).toContain(result.backend);
    expect(Object.keys(result.limits).sort()).toEqual([...LIMIT_NAMES].sort());
    for (const name of LIMIT_NAMES) {
      expect(result.limits[name], name).toMatchObject({ contract: 'prevented' });
      expect(result.limits[name].reason.length).toBeGreaterThan(0);
    }
    expect(result.allPrevented).toBe(true);
    expect(fs.readdirSync(path.join(state.dir, 'groups'))).toEqual([]);
    expect(fs.readdirSync(path.join(images.dir, 'images'))).toEqual([]);
    expect(fs.readdirSync(path.join(images.dir, 'mnt'))).toEqual([]);
  });

  it('reports not_supported with the reason when cgroups are unusable, and still tests the rlimits', async () => {
    const state = tempDir('limits-probe-state');
    const images = tempDir('limits-probe-img');
    cleanups.push(state.cleanup, images.cleanup);
    // A hierarchy that does not exist: the group cannot be created.
    const missing = path.join(images.dir, 'karotte-no-cgroupfs');
    const result = await probe({
      stateDir: state.dir,
      imageDir: images.dir,
      hierarchy: { version: 1, memory: missing, pids: missing, freezer: missing, cpu: null },
    });
    expect(result.backend).toBe('watchdog');
    expect(result.limits.memory.contract).toBe('detected_and_reaped');
    expect(result.limits.memory.reason).toMatch(/cgroups unusable/);
    expect(result.limits.cpu_weight.contract).toBe('not_supported');
    expect(result.limits.nofile.contract).toBe('prevented');
    expect(result.limits.oom_score_adj.contract).toBe('prevented');
    expect(result.limits.disk_bytes.contract).toBe('prevented');
    expect(result.allPrevented).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { checkHost } from './index.js';

describe('checkHost', () => {
  it('probes every defense on this host for real and reports how it is enforced', async () => {
    const result = await checkHost();
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
    const byName = Object.fromEntries(result.defenses.map((defense) => [defense.name, defense]));
    for (const name of [
      'user_separation',
      'no_privileges',
      'pid_namespace',
      'mount_namespace',
      'read_only_host',
      'ipc_namespace',
      'uts_namespace',
      'network_isolation',
      'core_dumps',
      'locked_memory',
      'oom_preference',
      'reaping',
    ]) {
      expect(byName[name], name).toMatchObject({ contract: 'prevented' });
    }
    // This host has cgroup v1 memory and pids and loop devices: the kernel enforces them.
    expect(byName['memory']?.contract).toBe('prevented');
    expect(byName['pids']?.contract).toBe('prevented');
    expect(byName['disk_bytes']?.contract).toBe('prevented');
    expect(byName['rootless_tier']?.contract).toBe('not_supported');
    expect(byName['locked_memory']?.reason).toBe('ulimit -l inside: 64 KiB');
    expect(byName['reaping']?.mechanism).toContain('kernel keys');
    expect(result.ok).toBe(true);
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectCgroups, parseProcCgroup } from './cgroup-detect.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

// This project's machine: v1 controllers, v2 mounted without controllers.
const HYBRID_MOUNTS = [
  '30 25 0:26 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw,mode=755',
  '31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:10 - cgroup cgroup rw,cpu',
  '33 30 0:29 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory',
  '35 30 0:31 / /sys/fs/cgroup/freezer rw,relatime shared:14 - cgroup cgroup rw,freezer',
  '37 30 0:33 / /sys/fs/cgroup/pids rw,relatime shared:16 - cgroup cgroup rw,pids',
  '38 30 0:34 / /sys/fs/cgroup/systemd rw,relatime shared:17 - cgroup cgroup rw,name=systemd',
  '39 30 0:35 / /sys/fs/cgroup/unified rw,relatime shared:18 - cgroup2 cgroup2 rw',
].join('\n');
const HYBRID_SELF = [
  '9:name=systemd:/',
  '8:pids:/',
  '6:freezer:/',
  '4:memory:/process_api/abc',
  '1:cpu:/',
  '0::/',
].join('\n');

describe('cgroup detection', () => {
  it('parses /proc/self/cgroup with co-mounted controllers', () => {
    const map = parseProcCgroup('3:cpu,cpuacct:/x\n0::/y\n');
    expect(map.get('cpu')).toBe('/x');
    expect(map.get('cpuacct')).toBe('/x');
    expect(map.get('')).toBe('/y');
  });

  it('picks v1 on a hybrid host whose unified mount has no controllers, and says why', () => {
    const result = detectCgroups({ mountInfo: HYBRID_MOUNTS, procCgroup: HYBRID_SELF });
    // The real /sys/fs/cgroup/unified/cgroup.controllers of the machine decides v2 here; on
    // this project's machines it is empty, elsewhere it may not exist.
    if (result.hierarchy?.version === 1) {
      expect(result.hierarchy).toEqual({
        version: 1,
        memory: '/sys/fs/cgroup/memory/process_api/abc',
        pids: '/sys/fs/cgroup/pids',
        freezer: '/sys/fs/cgroup/freezer',
        cpu: '/sys/fs/cgroup/cpu',
      });
      expect(result.reasons.join('\n')).toMatch(/cgroup v2: /);
    }
  });

  it('picks v2 when the unified hierarchy offers memory and pids at our group, stepping out of the harness leaf', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-detect-'));
    made.push(root);
    fs.mkdirSync(path.join(root, 'svc', 'karotte-harness'), { recursive: true });
    fs.writeFileSync(path.join(root, 'svc', 'cgroup.controllers'), 'cpu memory pids');
    const mountInfo = `50 1 0:40 / ${root} rw,relatime - cgroup2 cgroup2 rw`;
    const inLeaf = detectCgroups({ mountInfo, procCgroup: '0::/svc/karotte-harness\n' });
    expect(inLeaf.hierarchy).toEqual({
      version: 2,
      mountPoint: root,
      base: path.join(root, 'svc'),
      harnessLeaf: path.join(root, 'svc', 'karotte-harness'),
    });
    const direct = detectCgroups({ mountInfo, procCgroup: '0::/svc\n' });
    expect(direct.hierarchy).toEqual(inLeaf.hierarchy);
  });

  it('never uses a read-only or controller-less v2, nor read-only v1 mounts', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-detect-'));
    made.push(root);
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpu memory pids');
    const readOnly = detectCgroups({
      mountInfo: `50 1 0:40 / ${root} ro,relatime - cgroup2 cgroup2 rw`,
      procCgroup: '0::/\n',
    });
    expect(readOnly.hierarchy).toBeNull();
    expect(readOnly.reasons.join('\n')).toMatch(/read-only/);
    const roV1 = detectCgroups({
      mountInfo: HYBRID_MOUNTS.replaceAll(' rw,relatime shared', ' ro,relatime shared').replace(
        / - cgroup2 .*/,
        ' - tmpfs x rw',
      ),
      procCgroup: HYBRID_SELF,
    });
    expect(roV1.hierarchy).toBeNull();
    expect(roV1.reasons.join('\n')).toMatch(/no read-write memory mount/);
  });

  it('a container whose cgroup mount root is its own group sees its groups through the mount', () => {
    const mountInfo =
      '31 30 0:27 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n' +
      '32 30 0:28 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n' +
      '33 30 0:29 /docker/abc /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer';
    const result = detectCgroups({
      mountInfo,
      procCgroup: '4:memory:/docker/abc/sub\n3:pids:/docker/abc\n2:freezer:/docker/abc\n',
    });
    expect(result.hierarchy).toEqual({
      version: 1,
      memory: '/sys/fs/cgroup/memory/sub',
      pids: '/sys/fs/cgroup/pids',
      freezer: '/sys/fs/cgroup/freezer',
      cpu: null,
    });
  });
});

import { describe, expect, it } from 'vitest';
import { parseMountInfo } from '@karotte/base';
import { mountViolations, reachableMounts } from './mounts.js';

// The mount table of a real sandbox on this project's machine, read from /proc/<init>/mountinfo
// after setup. Stacked host mounts (/proc, /dev/shm, /dev/pts), a host tmpfs under /tmp and
// another episode's quota under /var/lib/karotte are still writable, but no path reaches them.
const SANDBOX = `46 45 254:0 / / ro,nosuid,relatime - ext4 /dev/vda rw,discard
47 46 0:25 / /mnt/sandboxing/model_tools_env/v1/python ro,nosuid,nodev,relatime - tmpfs model_tools_unavailable ro,size=4k,mode=755
48 46 0:21 / /proc rw,relatime - proc proc rw
49 46 0:22 / /sys ro,nosuid,relatime - sysfs sysfs rw
50 49 0:28 / /sys/fs/cgroup ro,nosuid,relatime - tmpfs tmpfs rw,mode=755
51 50 0:29 / /sys/fs/cgroup/cpu ro,nosuid,relatime - cgroup cgroup rw,cpu
58 50 0:36 / /sys/fs/cgroup/pids ro,nosuid,relatime - cgroup cgroup rw,pids
61 46 0:6 / /dev ro,nosuid,relatime - devtmpfs devtmpfs rw,size=12334460k,mode=755
62 61 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
63 62 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
64 61 0:24 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000
65 64 0:26 / /dev/pts ro,nosuid,relatime - devpts devpts rw,mode=600,ptmxmode=000
66 46 254:0 /run/netns /run/netns ro,nosuid,relatime - ext4 /dev/vda rw,discard
67 46 0:39 / /tmp/karotte-prof-tmpfs rw,relatime - tmpfs karotte-prof-tmpfs rw,size=3145728k
68 46 7:0 / /var/lib/karotte/mnt/karotte-8713-494217fe298c rw,nosuid,nodev,noatime - ext4 /dev/loop0 rw
70 48 0:41 / /proc ro,nosuid,nodev,noexec,relatime - proc proc rw
71 46 0:42 / /tmp rw,nosuid,nodev,relatime - tmpfs karotte rw,size=262144k
72 63 0:43 / /dev/shm rw,nosuid,nodev,relatime - tmpfs karotte rw,size=65536k
73 46 254:0 /run/karotte/sandbox/sb-4db46e39e4/home /home ro,nosuid,nodev,noexec,relatime - ext4 /dev/vda rw,discard
74 73 7:0 / /home/student rw,nosuid,nodev,noatime - ext4 /dev/loop0 rw,noinit_itable
75 46 254:0 /run/karotte/sandbox/sb-4db46e39e4/passwd /etc/passwd ro,nosuid,nodev,relatime - ext4 /dev/vda rw,discard
76 46 254:0 /run/karotte/sandbox/sb-4db46e39e4/group /etc/group ro,nosuid,nodev,relatime - ext4 /dev/vda rw,discard
77 46 0:44 / /root ro,nosuid,nodev,noexec,relatime - tmpfs karotte-cover ro,size=4k,nr_inodes=1,mode=000
78 46 0:45 / /run/karotte ro,nosuid,nodev,noexec,relatime - tmpfs karotte-cover ro,size=4k,nr_inodes=1,mode=000
79 46 0:46 / /var/lib/karotte ro,nosuid,nodev,noexec,relatime - tmpfs karotte-cover ro,size=4k,nr_inodes=1,mode=000
`;
const WRITABLE = ['/tmp', '/dev/shm', '/home/student'];

describe('reachableMounts', () => {
  const reachable = (text: string): number[] =>
    reachableMounts(parseMountInfo(text).entries).map((m) => m.id);

  it('skips mounts stacked under another at the same place, and what lies beneath covers', () => {
    const ids = reachable(SANDBOX);
    // Stacked: only the top /proc, /dev/shm, /dev/pts are reachable.
    for (const hidden of [48, 62, 63, 64]) expect(ids).not.toContain(hidden);
    for (const top of [70, 72, 65]) expect(ids).toContain(top);
    // Beneath the fresh /tmp and the /var/lib/karotte cover: unreachable.
    expect(ids).not.toContain(67);
    expect(ids).not.toContain(68);
    // A mount inside a bind (the working directory inside /home) is reachable.
    expect(ids).toContain(74);
    expect(ids).toContain(46);
  });

  it('counts both when two mounts share a parent and a mount point (no order is visible)', () => {
    const text =
      '1 0 0:1 / / ro,nosuid - ext4 r rw\n2 1 0:2 / /x ro,nosuid - tmpfs a rw\n3 1 0:3 / /x rw - tmpfs b rw\n';
    expect(reachable(text)).toEqual([1, 2, 3]);
  });
});

// The same after /sys became a fresh sysfs: the host's sysfs and its cgroup mounts lie beneath.
const FRESH_SYS = `45 44 254:0 / / ro,nosuid,relatime - ext4 /dev/vda rw
48 45 0:22 / /sys rw,relatime - sysfs sysfs rw
49 48 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
50 49 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
59 49 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
69 48 0:41 / /sys ro,nosuid,nodev,noexec,relatime - sysfs karotte-sys ro
`;

describe('mountViolations', () => {
  it('accepts a fresh read-only sysfs over the host’s (whose submounts are out of reach)', () => {
    expect(reachableMounts(parseMountInfo(FRESH_SYS).entries).map((mount) => mount.id)).toEqual([45, 69]);
    expect(mountViolations(FRESH_SYS, WRITABLE)).toEqual([]);
  });

  it('accepts a real sandbox: everything reachable is read-only and nosuid, the writable places nosuid,nodev', () => {
    expect(mountViolations(SANDBOX, WRITABLE)).toEqual([]);
  });

  it('names a reachable writable mount, a writable place without nodev, and an unreadable table', () => {
    const leaky = SANDBOX.replace(
      '66 46 254:0 /run/netns /run/netns ro,nosuid,relatime',
      '66 46 254:0 /run/netns /run/netns rw,nosuid,relatime',
    ).replace('71 46 0:42 / /tmp rw,nosuid,nodev,relatime', '71 46 0:42 / /tmp rw,nosuid,relatime');
    expect(mountViolations(leaky, WRITABLE)).toEqual([
      '/run/netns (ext4) is not read-only and nosuid: rw,nosuid,relatime',
      '/tmp (tmpfs) is writable without nosuid,nodev: rw,nosuid,relatime',
    ]);
    // A host mount that the sweep left (the top one, not hidden by anything).
    const unswept = SANDBOX.replace(
      '70 48 0:41 / /proc ro,nosuid,nodev,noexec',
      '70 48 0:41 / /proc rw,nosuid,nodev,noexec',
    );
    expect(mountViolations(unswept, WRITABLE)).toEqual([
      '/proc (proc) is not read-only and nosuid: rw,nosuid,nodev,noexec,relatime',
    ]);
    expect(mountViolations('', WRITABLE)).toEqual(['the mount table is empty']);
    expect(mountViolations(`${SANDBOX}garbage\n`, WRITABLE)).toEqual([
      'unreadable mount table line: garbage',
    ]);
  });
});

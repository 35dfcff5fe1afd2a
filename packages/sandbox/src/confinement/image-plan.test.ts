// The mount plan of a world whose student runs in an image: the tree bound before the world's
// own /tmp (which would hide a tree kept there), devices only through the read-only /dev bind,
// and the writable places the proof allows exactly the image's /tmp, /dev/shm and home.
import { describe, expect, it } from 'vitest';
import { IMAGE_ROOT, imageBinds, planMounts } from './plan.js';

describe('imageBinds in a plan', () => {
  const image = imageBinds(
    '/tmp/karotte-cache/abc/rootfs',
    [
      { source: '/run/karotte/sandbox/sb-1/home', target: '/home', writable: false, noexec: true },
      { source: '/run/karotte/q/mnt', target: '/home/student', writable: true },
    ],
    { dev: true },
  );
  const plan = planMounts({
    hostname: 'karotte-test',
    loopback: false,
    dev: { maxPtys: 4 },
    tmpfs: [{ path: '/tmp', sizeBytes: 1024, mode: '1777' }],
    earlyBinds: image.earlyBinds,
    binds: image.binds,
    covers: [],
    emptyFile: '/run/karotte/empty',
  });
  const directives = plan.directives.join(' ');

  it('binds the tree read-only before the tmpfs, and the rest after', () => {
    const tree = directives.indexOf(`bind /tmp/karotte-cache/abc/rootfs ${IMAGE_ROOT} ro,nosuid,nodev`);
    const tmpfs = directives.indexOf('tmpfs /tmp ');
    const tmpInImage = directives.indexOf(`bind /tmp ${IMAGE_ROOT}/tmp nosuid,nodev`);
    expect(tree).toBeGreaterThan(-1);
    expect(tmpfs).toBeGreaterThan(tree);
    expect(tmpInImage).toBeGreaterThan(tmpfs);
  });

  it('lets devices work only through the read-only /dev and devpts binds', () => {
    expect(directives).toContain(`bind /dev ${IMAGE_ROOT}/dev ro,nosuid,noexec`);
    expect(directives).toContain(`bind /dev/pts ${IMAGE_ROOT}/dev/pts ro,nosuid,noexec`);
    expect(directives).toContain(`bind /dev/shm ${IMAGE_ROOT}/dev/shm nosuid,nodev`);
    expect(directives).toContain(`bind /proc ${IMAGE_ROOT}/proc ro,nosuid,nodev,noexec`);
  });

  it('allows exactly the writable places inside the image', () => {
    expect(plan.writable).toEqual([
      '/tmp',
      `${IMAGE_ROOT}/dev/shm`,
      `${IMAGE_ROOT}/tmp`,
      `${IMAGE_ROOT}/home/student`,
    ]);
  });
});

// Test images built on this machine: a Debian bookworm root file system made by mmdebstrap
// (from the machine's own apt sources), written as an OCI image layout by the sandbox's own
// layout writer. Built images are kept in /var/cache/karotte/test-images (CI keeps them between
// runs) and rebuilt when missing; a build goes to a temporary directory renamed into place,
// so a half-built image is never used.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { writeOciLayout } from '../../packages/sandbox/src/image/layout-writer.js';

/** Where built test images are kept. */
const TEST_IMAGE_DIR = '/var/cache/karotte/test-images';

/** The test images, by name: the Debian packages each holds (beyond the essential ones). */
const TEST_IMAGES = {
  /** bash, coreutils, python3. */
  python: ['python3'],
  /** python3 and numpy (the ML-flavoured example). */
  numpy: ['python3', 'python3-numpy'],
} as const;

export type TestImageName = keyof typeof TEST_IMAGES;

/** Why a test image cannot be built here (no mmdebstrap, not root), or undefined. */
export function testImageUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'building a test image needs root';
  if (!fs.existsSync('/usr/bin/mmdebstrap'))
    return 'mmdebstrap is not installed (apt-get install mmdebstrap)';
  return undefined;
}

/**
 * The OCI layout directory of a test image, built first when missing (about 30 s to 2 min).
 * Its tag and env are fixed, so the same packages give the same kind of image.
 */
export async function testImage(name: TestImageName): Promise<string> {
  const layout = path.join(TEST_IMAGE_DIR, name);
  if (fs.existsSync(path.join(layout, 'index.json'))) return layout;
  const unavailable = testImageUnavailable();
  if (unavailable !== undefined) throw new Error(unavailable);
  fs.mkdirSync(TEST_IMAGE_DIR, { recursive: true, mode: 0o755 });
  const work = fs.mkdtempSync(path.join(TEST_IMAGE_DIR, `.karotte-build-${name}-`));
  try {
    const tarball = path.join(work, 'rootfs.tar');
    const result = spawnSync(
      '/usr/bin/mmdebstrap',
      [
        '--variant=essential',
        `--include=${TEST_IMAGES[name].join(',')}`,
        '--dpkgopt=path-exclude=/usr/share/man/*',
        '--dpkgopt=path-exclude=/usr/share/doc/*',
        '--dpkgopt=path-exclude=/usr/share/locale/*',
        '--format=tar',
        '--quiet',
        'bookworm',
        tarball,
      ],
      { encoding: 'utf8', timeout: 15 * 60_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' } },
    );
    if (result.status !== 0) {
      throw new Error(
        `mmdebstrap failed (${String(result.status ?? result.signal)}): ${result.stderr.slice(-2000)}`,
      );
    }
    const out = path.join(work, 'layout');
    await writeOciLayout({
      dir: out,
      layers: [tarball],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8'],
      workingDir: '/',
      tag: `karotte-test-${name}`,
    });
    fs.rmSync(tarball);
    try {
      fs.renameSync(out, layout);
    } catch (error) {
      // Another worker built it meanwhile: use theirs.
      if (!fs.existsSync(path.join(layout, 'index.json'))) throw error;
    }
    return layout;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

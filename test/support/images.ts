// Test images built on this machine: a Debian bookworm root file system made by mmdebstrap
// (from the machine's own apt sources), written as an OCI image layout by the sandbox's own
// layout writer (`buildDebianImage`). Built images are kept in /var/cache/karotte/test-images
// (CI keeps them between runs) and rebuilt when missing; a build goes to a temporary directory
// renamed into place, so a half-built image is never used.
import fs from 'node:fs';
import path from 'node:path';
import { buildDebianImage } from '../../packages/sandbox/src/image/debian.js';

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
 * The OCI layout directory of a test image, built first when missing (about 30 s to 2 min) by
 * the sandbox's own `buildDebianImage` (what `karotte image build-debian` runs), so the image
 * the app README builds and the one the tests build are the same build: either finds the
 * other's and does nothing.
 */
export async function testImage(name: TestImageName): Promise<string> {
  const layout = path.join(TEST_IMAGE_DIR, name);
  const unavailable = testImageUnavailable();
  if (unavailable !== undefined) {
    if (fs.existsSync(path.join(layout, 'index.json'))) return layout;
    throw new Error(unavailable);
  }
  fs.mkdirSync(TEST_IMAGE_DIR, { recursive: true, mode: 0o755 });
  await buildDebianImage({ out: layout, packages: [...TEST_IMAGES[name]] });
  return layout;
}

// Importing images, honest and hostile, as root into a cache of the test's own. Every hostile
// layer is refused with a clear error or made harmless, and the host is unchanged.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layoutOf, tarOf } from '../../test/layers.js';
import { ImageError } from './errors.js';
import { findCachedImage, importImage, listImages, pruneImages } from './cache.js';
import { tarHeader } from './tar.js';

const isRoot = process.getuid?.() === 0;
if (!isRoot)
  process.stderr.write('[karotte] image import tests skipped: they need root (a root-owned cache)\n');

let base = '';
let cacheDir = '';
/** A host directory a hostile layer aims at; it must stay empty. */
let hostTarget = '';

beforeAll(() => {
  if (!isRoot) return;
  base = mkdtempSync(path.join(os.tmpdir(), 'karotte-image-test-'));
  cacheDir = path.join(base, 'cache');
  hostTarget = mkdtempSync(path.join(os.tmpdir(), 'karotte-image-host-'));
});

afterAll(() => {
  if (base !== '') rmSync(base, { recursive: true, force: true });
  if (hostTarget !== '') rmSync(hostTarget, { recursive: true, force: true });
});

let counter = 0;
const fresh = (name: string): string => path.join(base, `${name}-${(counter += 1)}`);

async function refused(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ImageError.isInstance(error), String(error)).toBe(true);
  expect((error as ImageError).code).toBe(code);
  expect((error as ImageError).message).toMatch(message);
}

/** Nothing half-unpacked is left in the cache, and the host target is untouched. */
function expectCleanFailure(): void {
  expect(readdirSync(cacheDir).filter((name) => name.startsWith('.staging-'))).toEqual([]);
  expect(readdirSync(hostTarget)).toEqual([]);
}

describe.skipIf(!isRoot)('image import', () => {
  it('unpacks layers in order: whiteouts, opaque directories, links, env and working directory', async () => {
    const lower = tarOf([
      { path: 'etc/' },
      { path: 'etc/os-release', content: 'ID=karotte\n' },
      { path: 'usr/bin/' },
      { path: 'usr/bin/tool', content: '#!/bin/sh\necho tool\n', mode: 0o755 },
      { path: 'bin', type: 'symlink', linkName: 'usr/bin' },
      { path: 'usr/bin/tool-link', type: 'hardlink', linkName: 'usr/bin/tool' },
      { path: 'gone.txt', content: 'lower\n' },
      { path: 'opaque/' },
      { path: 'opaque/old.txt', content: 'old\n' },
      { path: 'tmp/', mode: 0o1777 },
    ]);
    const upper = tarOf([
      { path: '.wh.gone.txt', content: '' },
      { path: 'opaque/new.txt', content: 'new\n' },
      { path: 'opaque/.wh..wh..opq', content: '' },
      { path: 'bin/added', content: 'through the merged-usr link\n' },
    ]);
    const dir = fresh('honest');
    const digest = await layoutOf(dir, [lower, upper]);
    const result = await importImage(dir, { cacheDir, expectedDigest: digest });
    expect(result.cached).toBe(false);
    expect(result.digest).toBe(digest);
    const root = result.rootfs;
    expect(readFileSync(path.join(root, 'etc/os-release'), 'utf8')).toBe('ID=karotte\n');
    expect(readlinkSync(path.join(root, 'bin'))).toBe('usr/bin');
    expect(statSync(path.join(root, 'usr/bin/tool-link')).ino).toBe(
      statSync(path.join(root, 'usr/bin/tool')).ino,
    );
    expect(existsSync(path.join(root, 'gone.txt'))).toBe(false);
    expect(readdirSync(path.join(root, 'opaque'))).toEqual(['new.txt']);
    expect(readFileSync(path.join(root, 'usr/bin/added'), 'utf8')).toBe('through the merged-usr link\n');
    expect(statSync(path.join(root, 'tmp')).mode & 0o7777).toBe(0o1777);
    expect(statSync(path.join(root, 'usr/bin/tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(root).uid).toBe(0);
    expect(statSync(cacheDir).mode & 0o777).toBe(0o700);
    expect(result.config).toEqual({
      env: ['PATH=/usr/bin:/bin', 'KAROTTE_IMAGE_TEST=1'],
      workingDir: '/srv/app',
      user: '',
    });
    // Once unpacked, it is reused.
    const again = await importImage(dir, { cacheDir });
    expect(again.cached).toBe(true);
    expect(again.rootfs).toBe(root);
    expect(findCachedImage(cacheDir, digest)?.rootfs).toBe(root);
    expect(listImages(cacheDir).map((image) => image.digest)).toContain(digest);
    // A pin the image does not have is refused before anything is unpacked.
    await refused(
      importImage(dir, { cacheDir, expectedDigest: `sha256:${'0'.repeat(64)}` }),
      'IMAGE_DIGEST_MISMATCH',
      /not the pinned sha256:0{64}/u,
    );
    expect(pruneImages(cacheDir, [digest])).toEqual([digest]);
    expect(findCachedImage(cacheDir, digest)).toBeUndefined();
  });

  it('a symlink out of the tree, then a write through it, lands inside the tree', async () => {
    const layer = tarOf([
      { path: 'evil', type: 'symlink', linkName: hostTarget },
      { path: 'evil/pwned', content: 'written through an absolute link\n' },
      { path: 'up', type: 'symlink', linkName: '../../../../../../..' },
      { path: `up${hostTarget}/pwned-relative`, content: 'written through a relative link\n' },
    ]);
    const second = tarOf([{ path: 'evil/second-layer', content: 'later layer\n' }]);
    const dir = fresh('symlink-escape');
    await layoutOf(dir, [layer, second]);
    const { rootfs } = await importImage(dir, { cacheDir });
    expect(readdirSync(hostTarget)).toEqual([]);
    expect(readlinkSync(path.join(rootfs, 'evil'))).toBe(hostTarget);
    expect(readFileSync(path.join(rootfs, hostTarget, 'pwned'), 'utf8')).toBe(
      'written through an absolute link\n',
    );
    expect(readFileSync(path.join(rootfs, hostTarget, 'pwned-relative'), 'utf8')).toBe(
      'written through a relative link\n',
    );
    expect(readFileSync(path.join(rootfs, hostTarget, 'second-layer'), 'utf8')).toBe('later layer\n');
  });

  it('absolute paths are taken inside the tree; ".." paths are refused', async () => {
    const hostFile = path.join(hostTarget, 'absolute');
    const dir = fresh('absolute');
    await layoutOf(dir, [tarOf([{ path: hostFile, content: 'abs\n' }])]);
    const { rootfs } = await importImage(dir, { cacheDir });
    expect(readFileSync(path.join(rootfs, hostFile), 'utf8')).toBe('abs\n');
    expect(existsSync(hostFile)).toBe(false);

    const dotdot = fresh('dotdot');
    await layoutOf(dotdot, [tarOf([{ path: `a/../../../../../../..${hostTarget}/dotdot`, content: 'x\n' }])]);
    await refused(importImage(dotdot, { cacheDir }), 'LAYER_UNSAFE', /climbs out with "\.\."/u);
    expectCleanFailure();
  });

  it('a hard link to a host file is refused; one to the image own file is kept', async () => {
    const secret = path.join(hostTarget, '..', `karotte-image-secret-${process.pid}`);
    writeFileSync(secret, 'host secret\n', { mode: 0o600 });
    try {
      const dir = fresh('hardlink-host');
      await layoutOf(dir, [tarOf([{ path: 'stolen', type: 'hardlink', linkName: secret }])]);
      await refused(importImage(dir, { cacheDir }), 'LAYER_UNSAFE', /not a file of the image/u);
      expectCleanFailure();
      expect(statSync(secret).nlink).toBe(1);
      // Through a symlink that points at the host: resolved inside the tree, where nothing is.
      const viaLink = fresh('hardlink-via-symlink');
      await layoutOf(viaLink, [
        tarOf([
          { path: 'door', type: 'symlink', linkName: path.dirname(secret) },
          { path: 'stolen', type: 'hardlink', linkName: `door/${path.basename(secret)}` },
        ]),
      ]);
      await refused(importImage(viaLink, { cacheDir }), 'LAYER_UNSAFE', /not a file of the image/u);
      expect(statSync(secret).nlink).toBe(1);
    } finally {
      rmSync(secret, { force: true });
    }
  });

  it('device nodes and FIFOs are not created; setuid and setgid bits are stripped', async () => {
    const dir = fresh('special');
    await layoutOf(dir, [
      tarOf([
        { path: 'dev/' },
        { path: 'dev/karotte-mem', type: 'char' },
        { path: 'dev/karotte-disk', type: 'block' },
        { path: 'fifo', type: 'fifo' },
        { path: 'usr/bin/su-like', content: '#!/bin/sh\n', mode: 0o4755 },
        { path: 'usr/bin/sg-like', content: '#!/bin/sh\n', mode: 0o2755 },
        { path: 'shared/', mode: 0o3775 },
      ]),
    ]);
    const { rootfs, report } = await importImage(dir, { cacheDir });
    expect(readdirSync(path.join(rootfs, 'dev'))).toEqual([]);
    expect(existsSync(path.join(rootfs, 'fifo'))).toBe(false);
    expect(report.skippedSpecial).toBe(3);
    expect(statSync(path.join(rootfs, 'usr/bin/su-like')).mode & 0o7777).toBe(0o755);
    expect(statSync(path.join(rootfs, 'usr/bin/sg-like')).mode & 0o7777).toBe(0o755);
    expect(statSync(path.join(rootfs, 'shared')).mode & 0o7777).toBe(0o1775);
    expect(report.strippedSetid).toBe(3);
  });

  it('a layer whose digest does not match its manifest is refused, and nothing is cached', async () => {
    const dir = fresh('mismatch');
    await layoutOf(dir, [tarOf([{ path: 'a.txt', content: 'honest\n' }])]);
    const manifestBlobs = readdirSync(path.join(dir, 'blobs/sha256'));
    // Replace the layer blob (the one that is gzip) with another valid layer.
    const layerHex = manifestBlobs.find(
      (hex) => readFileSync(path.join(dir, 'blobs/sha256', hex))[0] === 0x1f,
    )!;
    writeFileSync(
      path.join(dir, 'blobs/sha256', layerHex),
      gzipSync(tarOf([{ path: 'a.txt', content: 'swapped\n' }])),
    );
    await refused(
      importImage(dir, { cacheDir }),
      'IMAGE_DIGEST_MISMATCH',
      /layer 1 has digest sha256:[0-9a-f]{64}, not sha256:/u,
    );
    expectCleanFailure();
    expect(listImages(cacheDir).some((image) => image.source === dir)).toBe(false);
    // A manifest swapped under the index is refused too.
    const indexPath = path.join(dir, 'index.json');
    const index = readFileSync(indexPath, 'utf8').replace(
      /"digest":"sha256:[0-9a-f]{64}"/u,
      `"digest":"sha256:${layerHex}"`,
    );
    writeFileSync(indexPath, index);
    await refused(importImage(dir, { cacheDir }), 'IMAGE_DIGEST_MISMATCH', /manifest blob has digest/u);
  });

  it('a truncated layer and a truncated archive are refused', async () => {
    const whole = tarOf([{ path: 'big.bin', content: Buffer.alloc(100_000, 7) }]);
    const dir = fresh('truncated-layer');
    await layoutOf(dir, [whole.subarray(0, 50_000)]);
    await refused(importImage(dir, { cacheDir }), 'LAYER_MALFORMED', /truncated/u);
    expectCleanFailure();
    // A gzip stream cut short.
    const cut = fresh('truncated-gzip');
    await layoutOf(cut, [tarOf([{ path: 'a', content: 'x' }])]);
    const blobs = readdirSync(path.join(cut, 'blobs/sha256'));
    const gz = blobs.find((hex) => readFileSync(path.join(cut, 'blobs/sha256', hex))[0] === 0x1f)!;
    const bytes = gzipSync(
      tarOf([
        {
          path: 'big.bin',
          content: Buffer.from(createHash('sha256').update('x').digest('hex').repeat(4000)),
        },
      ]),
    );
    writeFileSync(path.join(cut, 'blobs/sha256', gz), bytes.subarray(0, bytes.length - 40));
    await refused(
      importImage(cut, { cacheDir }),
      'LAYER_MALFORMED',
      /not a valid compressed stream|truncated/u,
    );
    expectCleanFailure();
    // An OCI archive (tar of a layout) cut in the middle of a blob.
    const layout = fresh('archive-source');
    await layoutOf(layout, [whole]);
    const archive = `${fresh('archive')}.tar`;
    expect(
      spawnSync('/usr/bin/tar', ['-C', layout, '-cf', archive, 'oci-layout', 'index.json', 'blobs']).status,
    ).toBe(0);
    const full = readFileSync(archive);
    writeFileSync(archive, full.subarray(0, Math.floor(full.length / 2)));
    await refused(importImage(archive, { cacheDir }), 'IMAGE_INVALID', /truncated/u);
  });

  it('a 10 GiB sparse file is refused before a byte of it is written', async () => {
    // Made by GNU tar from a real 10 GiB sparse file (no disk spent: it is all hole).
    const work = fresh('sparse-src');
    mkdirSync(work);
    expect(spawnSync('/usr/bin/truncate', ['-s', '10G', path.join(work, 'giant')]).status).toBe(0);
    const sparseTar = `${fresh('sparse')}.tar`;
    expect(spawnSync('/usr/bin/tar', ['--sparse', '-C', work, '-cf', sparseTar, 'giant']).status).toBe(0);
    const dir = fresh('sparse-layout');
    await layoutOf(dir, [readFileSync(sparseTar)]);
    await refused(importImage(dir, { cacheDir }), 'LAYER_UNSAFE', /sparse file/u);
    expectCleanFailure();
    // The same size declared as a plain file: over the budget of a file, refused from its header.
    const plain = fresh('giant-plain');
    await layoutOf(plain, [tarOf([{ path: 'giant', content: '', declaredSize: 10 * 1024 ** 3 }])]);
    await refused(importImage(plain, { cacheDir }), 'IMAGE_TOO_LARGE', /10737418240 bytes, over the budget/u);
    expectCleanFailure();
  });

  it('a tar bomb of a million entries is refused at the entry budget', async () => {
    const dir = fresh('bomb');
    mkdirSync(dir);
    const layerFile = path.join(dir, '.bomb.tar.gz');
    // Streamed: a million empty files (512 MiB of headers), gzip keeps it to a few MiB.
    function* entries(): Generator<Buffer> {
      const batch: Buffer[] = [];
      for (let i = 0; i < 1_000_000; i += 1) {
        batch.push(tarHeader({ path: `b/${Math.floor(i / 1000)}/${i}`, type: 'file', size: 0 }));
        if (batch.length === 2000) yield Buffer.concat(batch.splice(0));
      }
      yield Buffer.concat([...batch, Buffer.alloc(1024)]);
    }
    await pipeline(
      Readable.from(entries()),
      createGzip({ level: 1 }),
      (await import('node:fs')).createWriteStream(layerFile),
    );
    const { writeOciLayout } = await import('./layout-writer.js');
    await writeOciLayout({ dir, layers: [layerFile] });
    await refused(
      importImage(dir, { cacheDir, limits: { maxEntries: 50_000 } }),
      'IMAGE_TOO_LARGE',
      /more than 50000 entries/u,
    );
    expectCleanFailure();
  }, 300_000);

  it('reads docker archives and OCI archives', async () => {
    const layer = tarOf([{ path: 'etc/' }, { path: 'etc/hello', content: 'from a docker archive\n' }]);
    const diffId = `sha256:${createHash('sha256').update(layer).digest('hex')}`;
    const config = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { Env: ['A=1'], WorkingDir: '/work', User: '1000' },
        rootfs: { type: 'layers', diff_ids: [diffId] },
      }),
    );
    const configHex = createHash('sha256').update(config).digest('hex');
    const manifest = Buffer.from(
      JSON.stringify([
        { Config: `${configHex}.json`, RepoTags: ['karotte/test:1'], Layers: ['abc/layer.tar'] },
      ]),
    );
    const archive = `${fresh('docker')}.tar`;
    writeFileSync(
      archive,
      tarOf([
        { path: 'manifest.json', content: manifest },
        { path: `${configHex}.json`, content: config },
        { path: 'abc/' },
        { path: 'abc/layer.tar', content: layer },
      ]),
    );
    const result = await importImage(archive, { cacheDir, expectedDigest: `sha256:${configHex}` });
    expect(result.format).toBe('docker-archive');
    expect(readFileSync(path.join(result.rootfs, 'etc/hello'), 'utf8')).toBe('from a docker archive\n');
    expect(result.config).toEqual({ env: ['A=1'], workingDir: '/work', user: '1000' });
    // A docker archive whose layer is not the config's diff_id.
    const forged = `${fresh('docker-forged')}.tar`;
    writeFileSync(
      forged,
      tarOf([
        { path: 'manifest.json', content: manifest },
        { path: `${configHex}.json`, content: config },
        { path: 'abc/layer.tar', content: tarOf([{ path: 'etc/hello', content: 'forged\n' }]) },
      ]),
    );
    pruneImages(cacheDir, [`sha256:${configHex}`]);
    await refused(importImage(forged, { cacheDir }), 'IMAGE_DIGEST_MISMATCH', /unpacks to digest/u);
    // An OCI archive: the tar of a layout.
    const layout = fresh('oci-src');
    const digest = await layoutOf(layout, [layer]);
    const ociArchive = `${fresh('oci')}.tar`;
    expect(
      spawnSync('/usr/bin/tar', ['-C', layout, '-cf', ociArchive, 'oci-layout', 'index.json', 'blobs'])
        .status,
    ).toBe(0);
    const oci = await importImage(ociArchive, { cacheDir, expectedDigest: digest });
    expect(oci.format).toBe('oci-archive');
    expect(readFileSync(path.join(oci.rootfs, 'etc/hello'), 'utf8')).toBe('from a docker archive\n');
  });

  it.skipIf(!existsSync('/usr/bin/skopeo') && process.env['CI'] === undefined)(
    'reads what skopeo writes: a docker archive and an OCI archive of the same image',
    async () => {
      const layout = fresh('skopeo-src');
      const digest = await layoutOf(layout, [
        tarOf([{ path: 'etc/' }, { path: 'etc/from-skopeo', content: 'yes\n' }]),
      ]);
      for (const transport of ['docker-archive', 'oci-archive'] as const) {
        const archive = `${fresh(`skopeo-${transport}`)}.tar`;
        const copied = spawnSync(
          '/usr/bin/skopeo',
          ['copy', '--quiet', `oci:${layout}:latest`, `${transport}:${archive}`],
          {
            encoding: 'utf8',
          },
        );
        expect(copied.status, copied.stderr).toBe(0);
        const result = await importImage(archive, { cacheDir });
        expect(result.format).toBe(transport);
        expect(readFileSync(path.join(result.rootfs, 'etc/from-skopeo'), 'utf8')).toBe('yes\n');
        if (transport === 'oci-archive') expect(result.digest).toBe(digest);
        pruneImages(cacheDir, [result.digest]);
      }
    },
  );

  it('reads zstd and uncompressed layers as well as gzip ones', async () => {
    const dir = fresh('zstd');
    const digest = await layoutOf(dir, [tarOf([{ path: 'z.txt', content: 'zstd layer\n' }])], 'zstd');
    const plain = fresh('plain');
    await layoutOf(plain, [tarOf([{ path: 'p.txt', content: 'plain layer\n' }])], 'none');
    const z = await importImage(dir, { cacheDir, expectedDigest: digest });
    expect(readFileSync(path.join(z.rootfs, 'z.txt'), 'utf8')).toBe('zstd layer\n');
    const p = await importImage(plain, { cacheDir });
    expect(readFileSync(path.join(p.rootfs, 'p.txt'), 'utf8')).toBe('plain layer\n');
  });

  it('what is not an image is refused by name', async () => {
    await refused(
      importImage(path.join(base, 'karotte-missing'), { cacheDir }),
      'IMAGE_INVALID',
      /does not exist/u,
    );
    const empty = fresh('empty-dir');
    mkdirSync(empty);
    await refused(importImage(empty, { cacheDir }), 'IMAGE_INVALID', /not an OCI image layout/u);
    const text = `${fresh('text')}.tar`;
    writeFileSync(text, 'not a tar at all\n'.repeat(100));
    await refused(importImage(text, { cacheDir }), 'IMAGE_INVALID', /not an image archive/u);
    const fifo = `${fresh('fifo')}.tar`;
    expect(spawnSync('/usr/bin/mkfifo', [fifo]).status).toBe(0);
    await refused(importImage(fifo, { cacheDir }), 'IMAGE_INVALID', /neither a directory nor a file/u);
  });

  it.skipIf(!existsSync('/usr/bin/mmdebstrap') && process.env['CI'] === undefined)(
    'build-debian of what is already built answers its digest and builds nothing; something else at the path is never overwritten',
    async () => {
      const { buildDebianImage, debianImageTag } = await import('./debian.js');
      const { writeOciLayout } = await import('./layout-writer.js');
      const layer = `${fresh('built-layer')}.tar`;
      writeFileSync(layer, tarOf([{ path: 'etc/os-release', content: 'ID=debian\n' }]));
      // A layout as a finished build of bookworm + python3 leaves it.
      const built = fresh('built');
      const digest = await writeOciLayout({
        dir: built,
        layers: [layer],
        tag: debianImageTag('bookworm', ['python3']),
      });
      const before = statSync(path.join(built, 'index.json')).mtimeMs;
      await expect(buildDebianImage({ out: built, packages: ['python3'] })).resolves.toBe(digest);
      expect(statSync(path.join(built, 'index.json')).mtimeMs).toBe(before);
      // Another build (other packages) at that path, or a directory that is no image: refused.
      await refused(
        buildDebianImage({ out: built, packages: ['python3', 'python3-numpy'] }),
        'IMAGE_INVALID',
        /is not a build of bookworm-python3-python3-numpy/u,
      );
      const other = fresh('not-an-image');
      mkdirSync(other);
      writeFileSync(path.join(other, 'keep.txt'), 'mine\n');
      await refused(
        buildDebianImage({ out: other, packages: ['python3'] }),
        'IMAGE_INVALID',
        /exists already/u,
      );
      expect(readFileSync(path.join(other, 'keep.txt'), 'utf8')).toBe('mine\n');
    },
  );
});

// The image cache: each image unpacked once, by digest, into a root-owned directory, and
// reused read-only by every episode after. An import unpacks into a private staging directory
// and renames it into place only once every layer's digest has checked out, so a reader never
// sees a half-unpacked or unverified tree, and two imports of one image at once both end
// with the one tree (the second rename loses and its copy is removed).
import { createHash, randomBytes } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { createGunzip } from 'node:zlib';
import { parseJsonStrict, parseOptions } from '@karotte/base';
import { z } from 'zod';
import { ImageError } from './errors.js';
import {
  digestSchema,
  openImage,
  readSmallFile,
  type ImageRuntimeConfig,
  type ImageSource,
  type LayerBlob,
} from './source.js';
import { TarReader } from './tar.js';
import { LayerUnpacker, type UnpackReport } from './unpack.js';
import { createZstdDecompressor } from './zstd.js';

/** Where unpacked images live unless told otherwise. */
export const DEFAULT_IMAGE_CACHE_DIR = '/var/lib/karotte/task-images';

/** Budgets of an import: a layer over one is refused, never unpacked in part. */
export const imageLimitsSchema = z.strictObject({
  /** Most entries in all layers together. @default 500000 */
  maxEntries: z.number().int().positive().default(500_000),
  /** Largest file. @default 4 GiB */
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(4 * 1024 ** 3),
  /** Bytes of every file of every layer together. @default 32 GiB */
  maxTotalBytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 ** 3),
});

export const importImageOptionsSchema = z.strictObject({
  /** Root-owned directory of unpacked images. @default '/var/lib/karotte/task-images' */
  cacheDir: z.string().min(1).default(DEFAULT_IMAGE_CACHE_DIR),
  /** The digest the image must have (its manifest's, or its config's). */
  expectedDigest: digestSchema.optional(),
  limits: imageLimitsSchema.prefault({}),
  abortSignal: z.instanceof(AbortSignal).optional(),
});
export type ImportImageOptions = z.input<typeof importImageOptionsSchema>;

/** An image in the cache. */
export interface CachedImage {
  readonly digest: string;
  readonly configDigest: string;
  readonly format: ImageSource['format'];
  /** The unpacked tree (root-owned, never written after its import). */
  readonly rootfs: string;
  readonly config: ImageRuntimeConfig;
  /** Where it was imported from. */
  readonly source: string;
  readonly importedAt: string;
  readonly report: UnpackReport;
}

/** What `importImage` did. */
export interface ImportResult extends CachedImage {
  /** True when the image was in the cache already (nothing was unpacked). */
  readonly cached: boolean;
  readonly durationMs: number;
}

const recordSchema = z.strictObject({
  digest: digestSchema,
  configDigest: digestSchema,
  format: z.enum(['oci-layout', 'oci-archive', 'docker-archive']),
  config: z.strictObject({ env: z.array(z.string()), workingDir: z.string(), user: z.string() }),
  source: z.string(),
  importedAt: z.string(),
  report: z.strictObject({
    entries: z.number(),
    bytes: z.number(),
    skippedSpecial: z.number(),
    strippedSetid: z.number(),
  }),
});

const hexOf = (digest: string): string => digest.slice('sha256:'.length);

/** The cache directory, made root-only if missing; refused unless it is root's and closed to others. */
function openCacheDir(cacheDir: string, create: boolean): string {
  if (process.getuid?.() !== 0) throw new ImageError('IMAGE_CACHE_FAILED', 'the image cache needs root');
  const dir = path.resolve(cacheDir);
  if (create) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new ImageError('IMAGE_CACHE_FAILED', `cannot make the image cache ${dir}`, { cause: error });
    }
  }
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (stat === undefined) return dir;
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new ImageError(
      'IMAGE_CACHE_FAILED',
      `the image cache ${dir} must be a directory of root's that no one else can write (it is not)`,
    );
  }
  return dir;
}

function readRecord(dir: string): CachedImage | undefined {
  let bytes: Buffer;
  try {
    bytes = readSmallFile(path.join(dir, 'image.json'), 'record');
  } catch {
    return undefined;
  }
  const parsed = parseJsonStrict(bytes.toString('utf8'), { maxDepth: 16, maxStringLength: 1024 * 1024 });
  if (!parsed.ok) return undefined;
  const read = recordSchema.safeParse(parsed.value);
  if (!read.success) return undefined;
  const rootfs = path.join(dir, 'rootfs');
  if (statSync(rootfs, { throwIfNoEntry: false })?.isDirectory() !== true) return undefined;
  return { ...read.data, rootfs };
}

/** The cached image of `digest` (its manifest's or config's), if it was imported. */
export function findCachedImage(cacheDir: string, digest: string): CachedImage | undefined {
  const dir = openCacheDir(cacheDir, false);
  if (!/^sha256:[0-9a-f]{64}$/u.test(digest)) return undefined;
  const direct = readRecord(path.join(dir, hexOf(digest)));
  if (direct !== undefined) return direct;
  return listImages(dir).find((image) => image.configDigest === digest);
}

/** Every image in the cache. */
export function listImages(cacheDir: string = DEFAULT_IMAGE_CACHE_DIR): CachedImage[] {
  const dir = openCacheDir(cacheDir, false);
  if (statSync(dir, { throwIfNoEntry: false }) === undefined) return [];
  return readdirSync(dir)
    .filter((name) => /^[0-9a-f]{64}$/u.test(name))
    .map((name) => readRecord(path.join(dir, name)))
    .filter((image): image is CachedImage => image !== undefined)
    .sort((a, b) => a.importedAt.localeCompare(b.importedAt));
}

/**
 * Remove cached images (all, or those of `digests`) and what an interrupted import left.
 * Returns the digests removed. An episode running in a removed image keeps its tree until it
 * ends only if its mount holds it: prune when no episode runs.
 */
export function pruneImages(
  cacheDir: string = DEFAULT_IMAGE_CACHE_DIR,
  digests?: readonly string[],
): string[] {
  const dir = openCacheDir(cacheDir, false);
  if (statSync(dir, { throwIfNoEntry: false }) === undefined) return [];
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.staging-')) {
      if (digests === undefined) rmSync(path.join(dir, name), { recursive: true, force: true });
      continue;
    }
    if (!/^[0-9a-f]{64}$/u.test(name)) continue;
    const record = readRecord(path.join(dir, name));
    const digest = `sha256:${name}`;
    if (
      digests !== undefined &&
      !digests.includes(digest) &&
      (record === undefined || !digests.includes(record.configDigest))
    )
      continue;
    rmSync(path.join(dir, name), { recursive: true, force: true });
    removed.push(digest);
  }
  return removed;
}

const GZIP = [0x1f, 0x8b];
const ZSTD = [0x28, 0xb5, 0x2f, 0xfd];
const starts = (head: Buffer, magic: readonly number[]): boolean =>
  magic.every((byte, i) => head[i] === byte);

/** Unpack one layer, checking its blob digest and its uncompressed digest (`diff_id`). */
async function unpackLayer(
  layer: LayerBlob,
  index: number,
  unpacker: LayerUnpacker,
  reader: TarReader,
  abortSignal: AbortSignal | undefined,
): Promise<void> {
  const blobHash = createHash('sha256');
  const diffHash = createHash('sha256');
  const stream = layer.open();
  const iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await iterator.next();
  const head = first.done === true ? Buffer.alloc(0) : first.value;
  async function* chunks(): AsyncGenerator<Buffer> {
    if (first.done === true) return;
    blobHash.update(head);
    yield head;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return;
      blobHash.update(next.value);
      yield next.value;
    }
  }
  const decompress: Transform | undefined = starts(head, GZIP)
    ? createGunzip({ chunkSize: 256 * 1024 })
    : starts(head, ZSTD)
      ? createZstdDecompressor({ chunkSize: 256 * 1024 })
      : undefined;
  // An uncompressed layer's diff_id is its blob digest: hashed once.
  // What the consumer threw (a refused entry): Node.js 22's pipeline can reject with an
  // AbortError in its place, so the refusal is kept here and preferred.
  let thrown: unknown;
  const consume = async (source: AsyncIterable<Buffer>): Promise<void> => {
    try {
      for await (const chunk of source) {
        if (decompress !== undefined) diffHash.update(chunk);
        reader.write(chunk);
      }
    } catch (error) {
      thrown ??= error;
      throw error;
    }
  };
  unpacker.beginLayer();
  try {
    const input = Readable.from(chunks(), { objectMode: false });
    if (decompress === undefined) await pipeline(input, consume, { signal: abortSignal });
    else await pipeline(input, decompress, consume, { signal: abortSignal });
  } catch (rejected) {
    const error = thrown ?? rejected;
    unpacker.abort();
    stream.destroy();
    if (ImageError.isInstance(error)) throw error;
    if (abortSignal?.aborted === true)
      throw new ImageError('IMAGE_CACHE_FAILED', 'the import was aborted', { cause: error });
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code.startsWith('Z_') || code === 'ERR_ZLIB_INITIALIZATION_FAILED' || code.startsWith('ZSTD')) {
      throw new ImageError(
        'LAYER_MALFORMED',
        `layer ${index + 1} is not a valid compressed stream (truncated?)`,
        { cause: error },
      );
    }
    throw new ImageError(
      'IMAGE_CACHE_FAILED',
      `cannot unpack layer ${index + 1}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  reader.end();
  unpacker.endLayer();
  const blob = `sha256:${blobHash.digest('hex')}`;
  const diff = decompress === undefined ? blob : `sha256:${diffHash.digest('hex')}`;
  if (layer.digest !== undefined && blob !== layer.digest) {
    throw new ImageError(
      'IMAGE_DIGEST_MISMATCH',
      `layer ${index + 1} has digest ${blob}, not ${layer.digest} as its manifest says`,
    );
  }
  if (diff !== layer.diffId) {
    throw new ImageError(
      'IMAGE_DIGEST_MISMATCH',
      `layer ${index + 1} unpacks to digest ${diff}, not ${layer.diffId} as its config says`,
    );
  }
}

/**
 * The places a sandbox mounts over in an image's tree: real directories and files, never
 * symlinks (a mount follows a symlink at its target, which would lead out of the tree).
 * Whatever else is there is replaced.
 */
export const IMAGE_MOUNT_POINTS: readonly { readonly path: string; readonly kind: 'dir' | 'file' }[] =
  Object.freeze([
    { path: 'proc', kind: 'dir' },
    { path: 'sys', kind: 'dir' },
    { path: 'dev', kind: 'dir' },
    { path: 'tmp', kind: 'dir' },
    { path: 'home', kind: 'dir' },
    { path: 'etc', kind: 'dir' },
    { path: 'etc/passwd', kind: 'file' },
    { path: 'etc/group', kind: 'file' },
    { path: 'karotte', kind: 'dir' },
    { path: 'karotte/task', kind: 'dir' },
    { path: 'karotte/submission', kind: 'dir' },
    { path: 'karotte/hidden', kind: 'dir' },
    { path: 'karotte/out', kind: 'dir' },
    { path: 'karotte/host-lib', kind: 'dir' },
    { path: 'karotte/host-node', kind: 'file' },
  ]);

function ensureMountPoints(rootfs: string): void {
  for (const point of IMAGE_MOUNT_POINTS) {
    const at = path.join(rootfs, point.path);
    const stat = lstatSync(at, { throwIfNoEntry: false });
    const right = point.kind === 'dir' ? stat?.isDirectory() === true : stat?.isFile() === true;
    if (right) continue;
    if (stat !== undefined) rmSync(at, { recursive: true, force: true });
    if (point.kind === 'dir') {
      mkdirSync(at, { mode: 0o755 });
      chmodSync(at, 0o755);
    } else writeFileSync(at, '', { mode: 0o644 });
  }
}

function checkPin(source: ImageSource, expected: string | undefined): void {
  if (expected !== undefined && expected !== source.digest && expected !== source.configDigest) {
    throw new ImageError(
      'IMAGE_DIGEST_MISMATCH',
      `the image has digest ${source.digest} (config ${source.configDigest}), not the pinned ${expected}`,
    );
  }
}

/**
 * Import the image at `imagePath` into the cache (or find it there): check its documents and
 * every layer's digest, unpack its layers safely, and return where its tree is.
 * @throws ImageError (see its codes); nothing is left in the cache on failure.
 */
export async function importImage(
  imagePath: string,
  options: ImportImageOptions = {},
): Promise<ImportResult> {
  const opts = parseOptions(importImageOptionsSchema, options, 'importImage options');
  const started = Date.now();
  const source = openImage(path.resolve(imagePath));
  checkPin(source, opts.expectedDigest);
  const cacheDir = openCacheDir(opts.cacheDir, true);
  const final = path.join(cacheDir, hexOf(source.digest));
  const existing = readRecord(final);
  if (existing !== undefined) {
    // An image imported by an older version may miss a newer mount point: empty ones are added.
    ensureMountPoints(existing.rootfs);
    return { ...existing, cached: true, durationMs: Date.now() - started };
  }
  const staging = path.join(cacheDir, `.staging-${randomBytes(8).toString('hex')}`);
  mkdirSync(staging, { mode: 0o700 });
  try {
    const rootfs = path.join(staging, 'rootfs');
    mkdirSync(rootfs, { mode: 0o755 });
    chmodSync(rootfs, 0o755);
    const unpacker = new LayerUnpacker(rootfs, opts.limits);
    for (const [index, layer] of source.layers.entries()) {
      const reader = new TarReader(unpacker, {
        maxEntries: opts.limits.maxEntries - unpacker.report.entries,
        maxFileBytes: opts.limits.maxFileBytes,
      });
      await unpackLayer(layer, index, unpacker, reader, opts.abortSignal);
    }
    ensureMountPoints(rootfs);
    const record: z.infer<typeof recordSchema> = {
      digest: source.digest,
      configDigest: source.configDigest,
      format: source.format,
      config: { env: [...source.config.env], workingDir: source.config.workingDir, user: source.config.user },
      source: path.resolve(imagePath),
      importedAt: new Date().toISOString(),
      report: unpacker.report,
    };
    writeFileSync(path.join(staging, 'image.json'), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    try {
      renameSync(staging, final);
    } catch (error) {
      // Another import of the same image won the rename: use its tree.
      const other = readRecord(final);
      if (other === undefined)
        throw new ImageError('IMAGE_CACHE_FAILED', `cannot move the image into ${final}`, { cause: error });
      rmSync(staging, { recursive: true, force: true });
      return { ...other, cached: true, durationMs: Date.now() - started };
    }
    return { ...record, rootfs: path.join(final, 'rootfs'), cached: false, durationMs: Date.now() - started };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (ImageError.isInstance(error)) throw error;
    throw new ImageError('IMAGE_CACHE_FAILED', `cannot import ${imagePath}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Check the image at `imagePath` without unpacking it: its digest and runtime config. */
export function inspectImage(imagePath: string, expectedDigest?: string): ImageSource {
  const source = openImage(path.resolve(imagePath));
  checkPin(source, expectedDigest);
  return source;
}

// Reading an image where it lies: an OCI image layout directory, or a tarball (an OCI archive,
// `skopeo copy ... oci-archive:`, or a docker archive, `docker save` / `podman save` /
// `skopeo copy ... docker-archive:`). The tarball is never unpacked to find its blobs: its
// headers are walked by seeking, and each blob is read in place as a byte range.
//
// Every small document (index, manifest, config) is read bounded, checked against its digest,
// and parsed with the strict parser (duplicate keys refused).
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  fstatSync,
  openSync,
  readSync,
  statSync,
  type ReadStream,
} from 'node:fs';
import path from 'node:path';
import { parseJsonStrict, type JsonValue } from '@karotte/base';
import { z } from 'zod';
import { ImageError } from './errors.js';
import { walkTarFile, type TarFileEntry } from './tar.js';

/** Largest index, manifest or config read. */
const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;
/** Most entries of an image archive (each blob is one). */
const MAX_ARCHIVE_ENTRIES = 100_000;

const DIGEST = /^sha256:[0-9a-f]{64}$/u;
export const digestSchema = z.string().regex(DIGEST, 'a digest is sha256:<64 lowercase hex digits>');

const descriptorSchema = z.looseObject({
  mediaType: z.string().optional(),
  digest: digestSchema,
  size: z.number().int().nonnegative(),
  platform: z.looseObject({ architecture: z.string(), os: z.string() }).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
type Descriptor = z.infer<typeof descriptorSchema>;

const indexSchema = z.looseObject({ manifests: z.array(descriptorSchema).min(1) });
const manifestSchema = z.looseObject({
  mediaType: z.string().optional(),
  config: descriptorSchema,
  layers: z.array(descriptorSchema),
});
const configSchema = z.looseObject({
  architecture: z.string().optional(),
  os: z.string().optional(),
  config: z
    .looseObject({
      Env: z.array(z.string()).nullish(),
      WorkingDir: z.string().nullish(),
      User: z.string().nullish(),
    })
    .nullish(),
  rootfs: z.looseObject({ type: z.string(), diff_ids: z.array(digestSchema) }),
});
const dockerManifestSchema = z
  .array(
    z.looseObject({
      Config: z.string(),
      Layers: z.array(z.string()),
      RepoTags: z.array(z.string()).nullish(),
    }),
  )
  .min(1);

/** The parts of an image config a sandbox honours. */
export interface ImageRuntimeConfig {
  readonly env: readonly string[];
  readonly workingDir: string;
  readonly user: string;
}

/** A layer to unpack: where its bytes are, and the digests they must have. */
export interface LayerBlob {
  /** Digest of the blob as stored (compressed or not); undefined for a docker archive's layer. */
  readonly digest: string | undefined;
  /** Digest of the uncompressed tar (the config's `rootfs.diff_ids`). */
  readonly diffId: string;
  readonly mediaType: string | undefined;
  open(): ReadStream;
}

/** An image found at a path, its documents checked, its layers not yet read. */
export interface ImageSource {
  readonly format: 'oci-layout' | 'oci-archive' | 'docker-archive';
  /**
   * The image's digest: its manifest's for an OCI image, its config's (the image id docker
   * shows) for a docker archive.
   */
  readonly digest: string;
  readonly configDigest: string;
  readonly config: ImageRuntimeConfig;
  readonly layers: readonly LayerBlob[];
}

function parseDocument<Schema extends z.ZodType>(
  bytes: Buffer,
  schema: Schema,
  what: string,
): z.output<Schema> {
  const parsed = parseJsonStrict(bytes.toString('utf8'), {
    maxDepth: 32,
    maxStringLength: MAX_DOCUMENT_BYTES,
  });
  if (!parsed.ok)
    throw new ImageError('IMAGE_INVALID', `the image's ${what} is not valid JSON: ${parsed.reason}`);
  const result = schema.safeParse(parsed.value satisfies JsonValue);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ImageError(
      'IMAGE_INVALID',
      `the image's ${what} is not what an image holds: ${issue === undefined ? '' : `${issue.path.join('.') || '(root)'}: ${issue.message}`}`,
    );
  }
  return result.data;
}

const sha256 = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Where blobs are read from: a directory, or byte ranges of an archive. */
interface BlobStore {
  /** A small file of the image by its path inside it, or undefined when absent. */
  readFile(name: string): Buffer | undefined;
  /** A blob by path, as a stream. */
  stream(name: string): ReadStream;
  has(name: string): boolean;
}

/** A small file read whole, refused over the document bound. */
export function readSmallFile(file: string, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    throw new ImageError('IMAGE_INVALID', `cannot read the image's ${what} (${file})`, { cause: error });
  }
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_DOCUMENT_BYTES)
      throw new ImageError('IMAGE_INVALID', `the image's ${what} is over ${MAX_DOCUMENT_BYTES} bytes`);
    const buffer = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buffer, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buffer.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function directoryStore(dir: string): BlobStore {
  const at = (name: string): string =>
    path.join(dir, ...name.split('/').filter((p) => p !== '' && p !== '.' && p !== '..'));
  return {
    readFile: (name) =>
      statSync(at(name), { throwIfNoEntry: false })?.isFile() === true
        ? readSmallFile(at(name), name)
        : undefined,
    stream: (name) => createReadStream(at(name), { highWaterMark: 1024 * 1024 }),
    has: (name) => statSync(at(name), { throwIfNoEntry: false })?.isFile() === true,
  };
}

function archiveStore(file: string): BlobStore {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    throw new ImageError('IMAGE_INVALID', `cannot read the image archive ${file}`, { cause: error });
  }
  let entries: TarFileEntry[];
  try {
    entries = walkTarFile(fd, fstatSync(fd).size, {
      maxEntries: MAX_ARCHIVE_ENTRIES,
      maxFileBytes: Number.MAX_SAFE_INTEGER,
    });
  } catch (error) {
    throw ImageError.isInstance(error)
      ? new ImageError(
          error.code === 'IMAGE_TOO_LARGE' ? 'IMAGE_TOO_LARGE' : 'IMAGE_INVALID',
          `${file} is not an image archive: ${error.message}`,
          { cause: error },
        )
      : new ImageError('IMAGE_INVALID', `cannot read the image archive ${file}`, { cause: error });
  } finally {
    closeSync(fd);
  }
  const files = new Map<string, TarFileEntry>();
  for (const entry of entries) {
    if (entry.header.type !== 'file') continue;
    const name = entry.header.path
      .split('/')
      .filter((p) => p !== '' && p !== '.')
      .join('/');
    files.set(name, entry);
  }
  const clean = (name: string): string =>
    name
      .split('/')
      .filter((p) => p !== '' && p !== '.')
      .join('/');
  return {
    readFile: (name) => {
      const entry = files.get(clean(name));
      if (entry === undefined) return undefined;
      if (entry.header.size > MAX_DOCUMENT_BYTES)
        throw new ImageError('IMAGE_INVALID', `the image's ${name} is over ${MAX_DOCUMENT_BYTES} bytes`);
      const buffer = Buffer.alloc(entry.header.size);
      const handle = openSync(file, 'r');
      try {
        if (
          entry.header.size > 0 &&
          readSync(handle, buffer, 0, entry.header.size, entry.offset) !== entry.header.size
        ) {
          throw new ImageError('IMAGE_INVALID', `the image archive ${file} is truncated`);
        }
      } finally {
        closeSync(handle);
      }
      return buffer;
    },
    stream: (name) => {
      const entry = files.get(clean(name));
      if (entry === undefined) throw new ImageError('IMAGE_INVALID', `the image archive has no ${name}`);
      if (entry.header.size === 0) return createReadStream(file, { start: 1, end: 0 });
      return createReadStream(file, {
        start: entry.offset,
        end: entry.offset + entry.header.size - 1,
        highWaterMark: 1024 * 1024,
      });
    },
    has: (name) => files.has(clean(name)),
  };
}

const blobPath = (digest: string): string => `blobs/${digest.replace(':', '/')}`;

function readBlob(store: BlobStore, descriptor: Descriptor, what: string): Buffer {
  const bytes = store.readFile(blobPath(descriptor.digest));
  if (bytes === undefined)
    throw new ImageError('IMAGE_INVALID', `the image has no blob ${descriptor.digest} (its ${what})`);
  const actual = sha256(bytes);
  if (actual !== descriptor.digest) {
    throw new ImageError(
      'IMAGE_DIGEST_MISMATCH',
      `the image's ${what} blob has digest ${actual}, not ${descriptor.digest}`,
    );
  }
  return bytes;
}

const INDEX_TYPES = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

/** The one manifest of an index meant for linux/amd64 (descending into nested indexes once). */
function pickManifest(store: BlobStore, manifests: readonly Descriptor[], depth = 0): Descriptor {
  const usable = manifests.filter(
    (m) => m.platform === undefined || (m.platform.os === 'linux' && m.platform.architecture === 'amd64'),
  );
  if (usable.length !== 1) {
    throw new ImageError(
      'IMAGE_INVALID',
      usable.length === 0
        ? 'the image index has no manifest for linux/amd64'
        : `the image index holds ${usable.length} images; keep one (e.g. skopeo copy of one tag)`,
    );
  }
  const chosen = usable[0]!;
  if (chosen.mediaType !== undefined && INDEX_TYPES.has(chosen.mediaType)) {
    if (depth > 0) throw new ImageError('IMAGE_INVALID', 'the image index nests indexes too deep');
    const nested = parseDocument(readBlob(store, chosen, 'nested index'), indexSchema, 'nested index');
    return pickManifest(store, nested.manifests, depth + 1);
  }
  return chosen;
}

function runtimeConfig(config: z.infer<typeof configSchema>): ImageRuntimeConfig {
  return {
    env: config.config?.Env ?? [],
    workingDir: config.config?.WorkingDir ?? '',
    user: config.config?.User ?? '',
  };
}

function ociImage(store: BlobStore, format: 'oci-layout' | 'oci-archive'): ImageSource {
  const index = parseDocument(store.readFile('index.json')!, indexSchema, 'index.json');
  const descriptor = pickManifest(store, index.manifests);
  const manifest = parseDocument(readBlob(store, descriptor, 'manifest'), manifestSchema, 'manifest');
  const config = parseDocument(readBlob(store, manifest.config, 'config'), configSchema, 'config');
  if (config.rootfs.diff_ids.length !== manifest.layers.length) {
    throw new ImageError(
      'IMAGE_INVALID',
      `the image's manifest has ${manifest.layers.length} layers but its config ${config.rootfs.diff_ids.length}`,
    );
  }
  checkPlatform(config);
  return {
    format,
    digest: descriptor.digest,
    configDigest: manifest.config.digest,
    config: runtimeConfig(config),
    layers: manifest.layers.map((layer, i) => {
      if (!store.has(blobPath(layer.digest)))
        throw new ImageError('IMAGE_INVALID', `the image has no blob ${layer.digest} (layer ${i + 1})`);
      return {
        digest: layer.digest,
        diffId: config.rootfs.diff_ids[i]!,
        mediaType: layer.mediaType,
        open: () => store.stream(blobPath(layer.digest)),
      };
    }),
  };
}

function checkPlatform(config: z.infer<typeof configSchema>): void {
  if (
    (config.os !== undefined && config.os !== 'linux') ||
    (config.architecture !== undefined && config.architecture !== 'amd64')
  ) {
    throw new ImageError(
      'IMAGE_INVALID',
      `the image is for ${config.os ?? '?'}/${config.architecture ?? '?'}, not linux/amd64`,
    );
  }
}

function dockerImage(store: BlobStore, manifestBytes: Buffer): ImageSource {
  const manifests = parseDocument(manifestBytes, dockerManifestSchema, 'manifest.json');
  if (manifests.length !== 1) {
    throw new ImageError('IMAGE_INVALID', `the docker archive holds ${manifests.length} images; save one`);
  }
  const entry = manifests[0]!;
  const configBytes = store.readFile(entry.Config);
  if (configBytes === undefined)
    throw new ImageError('IMAGE_INVALID', `the docker archive has no ${entry.Config} (its config)`);
  const configDigest = sha256(configBytes);
  // The config's file name is its digest (`<hex>.json`, or `blobs/sha256/<hex>`): checked.
  const named = /([0-9a-f]{64})(?:\.json)?$/u.exec(entry.Config)?.[1];
  if (named !== undefined && `sha256:${named}` !== configDigest) {
    throw new ImageError(
      'IMAGE_DIGEST_MISMATCH',
      `the docker archive's config ${entry.Config} has digest ${configDigest}`,
    );
  }
  const config = parseDocument(configBytes, configSchema, 'config');
  if (config.rootfs.diff_ids.length !== entry.Layers.length) {
    throw new ImageError(
      'IMAGE_INVALID',
      `the docker archive lists ${entry.Layers.length} layers but its config ${config.rootfs.diff_ids.length}`,
    );
  }
  checkPlatform(config);
  return {
    format: 'docker-archive',
    digest: configDigest,
    configDigest,
    config: runtimeConfig(config),
    layers: entry.Layers.map((name, i) => {
      if (!store.has(name))
        throw new ImageError('IMAGE_INVALID', `the docker archive has no ${name} (layer ${i + 1})`);
      const blobDigest = /^blobs\/sha256\/([0-9a-f]{64})$/u.exec(name)?.[1];
      return {
        digest: blobDigest === undefined ? undefined : `sha256:${blobDigest}`,
        diffId: config.rootfs.diff_ids[i]!,
        mediaType: undefined,
        open: () => store.stream(name),
      };
    }),
  };
}

/**
 * The image at `imagePath`: an OCI layout directory, an OCI archive or a docker archive. Its
 * index, manifest and config are read and checked against their digests; its layers are
 * checked when they are unpacked.
 * @throws ImageError `IMAGE_INVALID` (missing, unreadable, not an image),
 *   `IMAGE_DIGEST_MISMATCH` (a document whose content is not its digest).
 */
export function openImage(imagePath: string): ImageSource {
  const stat = statSync(imagePath, { throwIfNoEntry: false });
  if (stat === undefined) throw new ImageError('IMAGE_INVALID', `${imagePath} does not exist`);
  if (stat.isDirectory()) {
    const store = directoryStore(imagePath);
    if (!store.has('oci-layout') || !store.has('index.json')) {
      throw new ImageError(
        'IMAGE_INVALID',
        `${imagePath} is not an OCI image layout (it has no oci-layout and index.json)`,
      );
    }
    return ociImage(store, 'oci-layout');
  }
  if (!stat.isFile()) throw new ImageError('IMAGE_INVALID', `${imagePath} is neither a directory nor a file`);
  const store = archiveStore(imagePath);
  if (store.has('oci-layout') && store.has('index.json')) return ociImage(store, 'oci-archive');
  const dockerManifest = store.readFile('manifest.json');
  if (dockerManifest !== undefined) return dockerImage(store, dockerManifest);
  throw new ImageError(
    'IMAGE_INVALID',
    `${imagePath} is a tar archive but not an image (no index.json nor manifest.json)`,
  );
}

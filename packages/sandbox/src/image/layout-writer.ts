// Writing an OCI image layout from layer tarballs: how a task author turns a root file system
// built on the machine (mmdebstrap's tarball) into an image `environment.image` can name,
// without a container engine.
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  createReadStream,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import { createZstdDecompressor } from './zstd.js';

export const writeOciLayoutOptionsSchema = z.strictObject({
  /** The layout directory to write (created; blobs already there are kept). */
  dir: z.string().min(1),
  /** Layer tarballs, lowest first: plain tar, gzip or zstd (detected by their first bytes). */
  layers: z.array(z.string().min(1)).min(1),
  /** The image's environment (`NAME=value`). @default [] */
  env: z.array(z.string()).default([]),
  /** @default '' */
  workingDir: z.string().default(''),
  /** The tag annotation of the manifest. @default 'latest' */
  tag: z.string().min(1).default('latest'),
});
export type WriteOciLayoutOptions = z.input<typeof writeOciLayoutOptionsSchema>;

async function digestOf(file: string, compression: Compression | undefined): Promise<string> {
  const hash = createHash('sha256');
  const consume = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) hash.update(chunk);
  };
  const input = createReadStream(file, { highWaterMark: 1024 * 1024 });
  if (compression === 'gzip') await pipeline(input, createGunzip(), consume);
  else if (compression === 'zstd') await pipeline(input, createZstdDecompressor(), consume);
  else await pipeline(input, consume);
  return `sha256:${hash.digest('hex')}`;
}

type Compression = 'gzip' | 'zstd';

function compressionOf(file: string): Compression | undefined {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const got = readSync(fd, head, 0, 4, 0);
    if (got >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
    if (got === 4 && head.equals(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]))) return 'zstd';
    return undefined;
  } finally {
    closeSync(fd);
  }
}

const MEDIA_TYPES: Readonly<Record<Compression | 'tar', string>> = {
  tar: 'application/vnd.oci.image.layer.v1.tar',
  gzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  zstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
};

/**
 * Write an OCI image layout of one linux/amd64 image from its layers. Returns the manifest's
 * digest (what `environment.digest` pins).
 */
export async function writeOciLayout(options: WriteOciLayoutOptions): Promise<string> {
  const opts = parseOptions(writeOciLayoutOptionsSchema, options, 'writeOciLayout options');
  const blobs = path.join(opts.dir, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (bytes: Buffer): { digest: string; size: number } => {
    const hex = createHash('sha256').update(bytes).digest('hex');
    writeFileSync(path.join(blobs, hex), bytes);
    return { digest: `sha256:${hex}`, size: bytes.length };
  };
  const layers: { mediaType: string; digest: string; size: number }[] = [];
  const diffIds: string[] = [];
  for (const layer of opts.layers) {
    const compression = compressionOf(layer);
    const digest = await digestOf(layer, undefined);
    diffIds.push(compression === undefined ? digest : await digestOf(layer, compression));
    copyFileSync(layer, path.join(blobs, digest.slice('sha256:'.length)));
    const { size } = statSync(layer);
    layers.push({
      mediaType: MEDIA_TYPES[compression ?? 'tar'],
      digest,
      size,
    });
  }
  const config = put(
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { Env: opts.env, WorkingDir: opts.workingDir },
        rootfs: { type: 'layers', diff_ids: diffIds },
        history: opts.layers.map(() => ({ created_by: 'karotte writeOciLayout' })),
      }),
    ),
  );
  const manifest = put(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers,
      }),
    ),
  );
  writeFileSync(path.join(opts.dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    path.join(opts.dir, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifest,
          annotations: { 'org.opencontainers.image.ref.name': opts.tag },
        },
      ],
    }),
  );
  return manifest.digest;
}

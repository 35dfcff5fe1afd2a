// Test helpers: layer tarballs made entry by entry (hostile ones included), and OCI layouts
// of them, written with the package's own layout writer.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { writeOciLayout } from '../src/image/layout-writer.js';
import { tarHeader, type TarEntryType } from '../src/image/tar.js';

export interface LayerEntry {
  readonly path: string;
  readonly type?: TarEntryType;
  readonly content?: string | Buffer;
  readonly linkName?: string;
  readonly mode?: number;
  /** A declared size without its body (for budget tests). */
  readonly declaredSize?: number;
}

const pad = (size: number): Buffer => Buffer.alloc((512 - (size % 512)) % 512);

/** A tar archive of the entries, with its two end blocks. */
export function tarOf(entries: readonly LayerEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const type = entry.type ?? (entry.content === undefined ? 'directory' : 'file');
    const body = entry.content === undefined ? Buffer.alloc(0) : Buffer.from(entry.content);
    const size = entry.declaredSize ?? body.length;
    parts.push(
      tarHeader({
        path: entry.path,
        type,
        size,
        mode: entry.mode,
        linkName: entry.linkName,
        devMajor: 1,
        devMinor: 3,
      }),
    );
    if (entry.declaredSize === undefined && body.length > 0) parts.push(body, pad(body.length));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** An OCI layout at `dir` whose layers are these tar archives (gzipped by default). Returns its digest. */
export async function layoutOf(
  dir: string,
  layers: readonly Buffer[],
  compression: 'gzip' | 'zstd' | 'none' = 'gzip',
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const files = layers.map((layer, i) => {
    const file = path.join(dir, `.layer-${i}.tar.${compression}`);
    writeFileSync(
      file,
      compression === 'gzip'
        ? gzipSync(layer, { level: 1 })
        : compression === 'zstd'
          ? zstdCompressSync(layer)
          : layer,
    );
    return file;
  });
  return writeOciLayout({
    dir,
    layers: files,
    env: ['PATH=/usr/bin:/bin', 'KAROTTE_IMAGE_TEST=1'],
    workingDir: '/srv/app',
  });
}

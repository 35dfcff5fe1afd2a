// zstd layers: Node.js has a zstd decompressor from 22.15 and 23.8 on; the project supports
// 22.12, where `node:zlib` has none. Looked up when a zstd layer is met, never imported by
// name (a named import of a missing export fails the whole module at load on 22.12).
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ImageError } from './errors.js';

type ZstdFactory = (options?: { chunkSize?: number }) => Transform;

/** A zstd decompression stream, or `LAYER_MALFORMED` on a Node.js without zstd. */
export function createZstdDecompressor(options?: { chunkSize?: number }): Transform {
  const factory = (zlib as unknown as { createZstdDecompress?: ZstdFactory }).createZstdDecompress;
  if (typeof factory !== 'function') {
    throw new ImageError(
      'LAYER_MALFORMED',
      `a zstd-compressed layer needs Node.js 22.15 or newer to unpack (this is ${process.versions.node}); gzip and uncompressed layers work on every supported version`,
    );
  }
  return factory(options);
}

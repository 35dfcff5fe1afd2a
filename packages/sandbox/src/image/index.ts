// @karotte/sandbox/image: a task's own root file system. An OCI image layout or an OCI /
// docker-archive tarball is checked blob by blob, unpacked once (safely: a hostile layer
// cannot write outside its tree) into a root-owned cache, and reused read-only by episodes.
export { ImageError } from './errors.js';
export type { ImageErrorCode } from './errors.js';
export {
  DEFAULT_IMAGE_CACHE_DIR,
  IMAGE_MOUNT_POINTS,
  findCachedImage,
  imageLimitsSchema,
  importImage,
  importImageOptionsSchema,
  inspectImage,
  listImages,
  pruneImages,
} from './cache.js';
export type { CachedImage, ImportImageOptions, ImportResult } from './cache.js';
export { openImage } from './source.js';
export type { ImageRuntimeConfig, ImageSource, LayerBlob } from './source.js';
export type { UnpackReport } from './unpack.js';
export { writeOciLayout, writeOciLayoutOptionsSchema } from './layout-writer.js';
export type { WriteOciLayoutOptions } from './layout-writer.js';
export { buildDebianImage, buildDebianImageOptionsSchema } from './debian.js';
export type { BuildDebianImageOptions } from './debian.js';

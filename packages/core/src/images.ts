// The image tool of `@karotte/sandbox/image`, for the reference app's `karotte image`: a task's
// own root file system is imported, listed and pruned here (the app depends on core only).
export {
  DEFAULT_IMAGE_CACHE_DIR,
  ImageError,
  buildDebianImage,
  importImage,
  listImages,
  pruneImages,
} from '@karotte/sandbox/image';
export type { CachedImage, ImportResult } from '@karotte/sandbox/image';

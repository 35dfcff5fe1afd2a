import { defineKarotteError } from '@karotte/base';

/** Stable codes of the errors of `@karotte/sandbox/image`, and their kinds. Never reworded once published. */
const IMAGE_ERROR_CODES = {
  /** The path is missing, unreadable, or not an OCI image layout or an OCI / docker-archive tarball. */
  IMAGE_INVALID: 'bad_argument',
  /** A blob's content does not have the digest its manifest names, or the image is not the pinned one. */
  IMAGE_DIGEST_MISMATCH: 'bad_argument',
  /** A layer holds an entry the unpacker refuses (a `..` path, a hard link out of the image, a sparse or unknown entry). */
  LAYER_UNSAFE: 'bad_argument',
  /** A layer is malformed: a bad header checksum, a truncated archive, a name that is not UTF-8. */
  LAYER_MALFORMED: 'bad_argument',
  /** The image is over a budget of the unpacker (entries, bytes of one file, bytes in all, depth). */
  IMAGE_TOO_LARGE: 'bad_argument',
  /** The image cache cannot be used: not root, an OS call failed. */
  IMAGE_CACHE_FAILED: 'system',
} as const;

/** Stable codes of the errors of `@karotte/sandbox/image`. */
export type ImageErrorCode = keyof typeof IMAGE_ERROR_CODES;

/** The error of `@karotte/sandbox/image`: an image that cannot be imported, and why. */
export class ImageError extends defineKarotteError({ name: 'ImageError', codes: IMAGE_ERROR_CODES }) {}

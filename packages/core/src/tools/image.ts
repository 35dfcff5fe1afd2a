// What `view_image_file` checks before it shows an image: its type by magic number (file-type,
// through @karotte/file-guard) and its size in pixels from its header, read with bounds checks
// on bytes the student wrote.
import { detectType } from '@karotte/file-guard';

type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/** The image's type and size, or why it is not an image the tool shows. */
export type ImageInfo =
  | { readonly ok: true; readonly mediaType: ImageMediaType; readonly width: number; readonly height: number }
  | { readonly ok: false; readonly reason: string };

const SHOWN: Readonly<Record<string, ImageMediaType>> = {
  'image/png': 'image/png',
  // An animated PNG is a PNG whose first frame any PNG reader shows.
  'image/apng': 'image/png',
  'image/jpeg': 'image/jpeg',
  'image/gif': 'image/gif',
  'image/webp': 'image/webp',
};

/** Type (by magic number) and pixel size of an image file's bytes. */
export async function inspectImage(bytes: Uint8Array): Promise<ImageInfo> {
  const detected = await detectType(bytes, false);
  const mediaType = SHOWN[detected.mime];
  if (mediaType === undefined) {
    return { ok: false, reason: `it is ${detected.mime}, not a JPEG, PNG, GIF or WebP image` };
  }
  const size = pixelSize(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), mediaType);
  if (size === undefined) return { ok: false, reason: `its ${mediaType} header is damaged or cut short` };
  return { ok: true, mediaType, ...size };
}

function pixelSize(bytes: Buffer, type: ImageMediaType): { width: number; height: number } | undefined {
  const has = (offset: number, length: number): boolean => offset >= 0 && offset + length <= bytes.length;
  switch (type) {
    case 'image/png':
      // Signature (8), then the IHDR chunk: length (4), type (4), width (4), height (4).
      if (!has(16, 8) || bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
      return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
    case 'image/gif':
      if (!has(6, 4)) return undefined;
      return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
    case 'image/webp':
      return webpSize(bytes, has);
    case 'image/jpeg':
      return jpegSize(bytes, has);
  }
}

function webpSize(
  bytes: Buffer,
  has: (offset: number, length: number) => boolean,
): { width: number; height: number } | undefined {
  if (!has(12, 4)) return undefined;
  const chunk = bytes.toString('latin1', 12, 16);
  if (chunk === 'VP8 ' && has(26, 4)) {
    // Lossy: a 3-byte frame tag and the start code 9d 01 2a, then 14-bit width and height.
    if (bytes[23] !== 0x9d || bytes[24] !== 0x01 || bytes[25] !== 0x2a) return undefined;
    return { width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L' && has(21, 4)) {
    // Lossless: signature 0x2f, then width-1 and height-1 in 14 bits each.
    if (bytes[20] !== 0x2f) return undefined;
    const bits = bytes.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && has(24, 6)) {
    // Extended: canvas width-1 and height-1 in 24 bits each.
    return { width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
  }
  return undefined;
}

function jpegSize(
  bytes: Buffer,
  has: (offset: number, length: number) => boolean,
): { width: number; height: number } | undefined {
  // Walk the marker segments after SOI to the first start-of-frame (SOF0-SOF15 but DHT, JPG,
  // DAC): FF, marker, length (2, counting itself), precision (1), height (2), width (2).
  let at = 2;
  while (has(at, 4)) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      at += 2; // standalone markers carry no length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image, or scan data before any frame
    const length = bytes.readUInt16BE(at + 2);
    if (length < 2) return undefined;
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (!has(at + 5, 4)) return undefined;
      return { width: bytes.readUInt16BE(at + 7), height: bytes.readUInt16BE(at + 5) };
    }
    at += 2 + length;
  }
  return undefined;
}

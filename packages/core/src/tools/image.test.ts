import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inspectImage } from './image.js';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A real PNG (8-bit RGB, every pixel black) that any decoder reads. */
function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc(height * (1 + width * 3));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function gif(width: number, height: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  return Buffer.concat([Buffer.from('GIF89a', 'latin1'), screen, Buffer.from([0x3b])]);
}

function jpeg(width: number, height: number): Buffer {
  const app0 = Buffer.from([
    0xff,
    0xe0,
    0x00,
    0x10,
    ...Buffer.from('JFIF\0', 'latin1'),
    1,
    1,
    0,
    0,
    1,
    0,
    1,
    0,
    0,
  ]);
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x11, 8, 0, 0, 0, 0, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  sof.writeUInt16BE(height, 5);
  sof.writeUInt16BE(width, 7);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, sof, Buffer.from([0xff, 0xd9])]);
}

function webpLossless(width: number, height: number): Buffer {
  const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
  const data = Buffer.alloc(5);
  data[0] = 0x2f;
  data.writeUInt32LE(bits >>> 0, 1);
  const vp8l = Buffer.concat([
    Buffer.from('VP8L', 'latin1'),
    Buffer.from([5, 0, 0, 0]),
    data,
    Buffer.from([0]),
  ]);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(4 + vp8l.length);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), size, Buffer.from('WEBP', 'latin1'), vp8l]);
}

describe('inspectImage', () => {
  it('reads the type by magic number and the size from the header', async () => {
    expect(await inspectImage(png(3, 2))).toEqual({ ok: true, mediaType: 'image/png', width: 3, height: 2 });
    expect(await inspectImage(gif(640, 480))).toEqual({
      ok: true,
      mediaType: 'image/gif',
      width: 640,
      height: 480,
    });
    expect(await inspectImage(jpeg(2500, 10))).toEqual({
      ok: true,
      mediaType: 'image/jpeg',
      width: 2500,
      height: 10,
    });
    expect(await inspectImage(webpLossless(1024, 4000))).toEqual({
      ok: true,
      mediaType: 'image/webp',
      width: 1024,
      height: 4000,
    });
  });

  it('refuses what is not a JPEG, PNG, GIF or WebP image, whatever its name', async () => {
    expect(await inspectImage(Buffer.from('just text, named picture.png\n'))).toEqual({
      ok: false,
      reason: 'it is application/octet-stream, not a JPEG, PNG, GIF or WebP image',
    });
    const pdf = Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n', 'latin1');
    expect(await inspectImage(pdf)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('application/pdf'),
    });
  });

  it('refuses a damaged header instead of reading past the bytes', async () => {
    // A GIF cut inside its screen descriptor (file-type knows it by its first bytes).
    expect(await inspectImage(gif(10, 10).subarray(0, 8))).toEqual({
      ok: false,
      reason: 'its image/gif header is damaged or cut short',
    });
    // A JPEG whose segments end before any frame header.
    const cut = jpeg(10, 10).subarray(0, 24);
    expect(await inspectImage(cut)).toEqual({
      ok: false,
      reason: 'its image/jpeg header is damaged or cut short',
    });
  });
});

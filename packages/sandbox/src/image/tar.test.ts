// The tar reader on its own (no root, no files): what it reads, and what it refuses.
import { describe, expect, it } from 'vitest';
import { ImageError } from './errors.js';
import { TarReader, tarHeader, type TarHeader } from './tar.js';

interface Seen {
  readonly header: TarHeader;
  body: string;
}

function read(archive: Buffer, chunkSize = 7, limits = { maxEntries: 100, maxFileBytes: 1 << 20 }): Seen[] {
  const seen: Seen[] = [];
  const reader = new TarReader(
    {
      entry: (header) => seen.push({ header, body: '' }),
      data: (chunk) => {
        seen.at(-1)!.body += chunk.toString('utf8');
      },
      endEntry: () => undefined,
    },
    limits,
  );
  // Odd chunk sizes: headers and bodies split anywhere.
  for (let i = 0; i < archive.length; i += chunkSize) reader.write(archive.subarray(i, i + chunkSize));
  reader.end();
  return seen;
}

const pad = (n: number): Buffer => Buffer.alloc((512 - (n % 512)) % 512);
const file = (name: string, body: string): Buffer[] => {
  const bytes = Buffer.from(body);
  return [tarHeader({ path: name, type: 'file', size: bytes.length }), bytes, pad(bytes.length)];
};
/** A pax record `<len> key=value\n`, its length counting itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let length = rest.length + 1;
  while (String(length).length + rest.length !== length) length += 1;
  return `${length}${rest}`;
}
const pax = (records: string): Buffer[] => {
  const body = Buffer.from(records);
  const header = tarHeader({ path: 'PaxHeader', type: 'file', size: body.length });
  header[156] = 'x'.charCodeAt(0);
  // The type flag changed: fix the checksum.
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return [header, body, pad(body.length)];
};
const end = Buffer.alloc(1024);

function refusal(fn: () => unknown): ImageError {
  try {
    fn();
  } catch (error) {
    if (ImageError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('TarReader', () => {
  it('reads files, directories, links and long pax names, split at any byte', () => {
    const long = `${'deep/'.repeat(40)}file.txt`;
    const archive = Buffer.concat([
      tarHeader({ path: 'dir', type: 'directory', mode: 0o755 }),
      ...file('dir/a.txt', 'hello'),
      tarHeader({ path: 'dir/link', type: 'symlink', linkName: 'a.txt' }),
      ...pax(paxRecord('path', long)),
      ...file('ignored-name', 'through pax'),
      end,
    ]);
    const seen = read(archive);
    expect(seen.map((s) => [s.header.path, s.header.type, s.body])).toEqual([
      ['dir', 'directory', ''],
      ['dir/a.txt', 'file', 'hello'],
      ['dir/link', 'symlink', ''],
      [long, 'file', 'through pax'],
    ]);
    expect(seen[2]!.header.linkName).toBe('a.txt');
  });

  it('refuses a bad checksum, a truncated archive, a sparse entry and an unknown type', () => {
    const good = Buffer.concat([...file('a', 'x'.repeat(600)), end]);
    const bad = Buffer.from(good);
    bad[0] = 'b'.charCodeAt(0);
    expect(refusal(() => read(bad)).message).toMatch(/bad checksum/u);
    expect(refusal(() => read(good.subarray(0, 700))).message).toMatch(/truncated/u);
    const sparse = tarHeader({ path: 's', type: 'file' });
    sparse[156] = 'S'.charCodeAt(0);
    sparse.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of sparse) sum += byte;
    sparse.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
    expect(refusal(() => read(Buffer.concat([sparse, end]))).code).toBe('LAYER_UNSAFE');
    expect(
      refusal(() => read(Buffer.concat([...pax(paxRecord('GNU.sparse.major', '1')), ...file('s', ''), end])))
        .message,
    ).toMatch(/sparse/u);
  });

  it('refuses an entry over the budgets before its body is read', () => {
    const huge = Buffer.concat([tarHeader({ path: 'giant', type: 'file', size: 10 * 1024 ** 3 }), end]);
    const error = refusal(() => read(huge));
    expect(error.code).toBe('IMAGE_TOO_LARGE');
    expect(error.message).toMatch(/10737418240 bytes, over the budget/u);
    const many = Buffer.concat([...Array.from({ length: 5 }, (_, i) => file(`f${i}`, '')).flat(), end]);
    expect(refusal(() => read(many, 512, { maxEntries: 4, maxFileBytes: 10 })).message).toMatch(
      /more than 4 entries/u,
    );
  });

  it('refuses a name that is not UTF-8', () => {
    const header = tarHeader({ path: 'x', type: 'file' });
    header[0] = 0xff;
    header.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
    expect(refusal(() => read(Buffer.concat([header, end]))).message).toMatch(/not UTF-8/u);
  });
});

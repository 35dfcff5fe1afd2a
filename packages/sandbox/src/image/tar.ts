// A tar reader for image layers and archives: ustar, POSIX pax (path, linkpath, size) and
// GNU long names, pushed chunk by chunk. Nothing of node's standard library reads tar, and a
// layer reader is where a hostile image attacks first, so it is small and strict: every
// header's checksum is checked, sizes are bounded before a byte of the body is read, a name
// that is not UTF-8 or holds a NUL is refused, sparse and unknown entry types are refused, and
// an archive that ends inside an entry is truncated (an error), never a short file.
import { readSync } from 'node:fs';
import { ImageError } from './errors.js';

const BLOCK = 512;

/** The kinds of entries a layer may hold. */
export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'char' | 'block' | 'fifo';

/** One entry's header, after pax and GNU long-name records are applied. */
export interface TarHeader {
  readonly path: string;
  readonly type: TarEntryType;
  /** Permission bits as stored (setuid, setgid and sticky included: the unpacker decides). */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** Bytes of the body (0 for everything but files). */
  readonly size: number;
  readonly mtimeSeconds: number;
  /** Target of a symlink or hard link. */
  readonly linkName: string;
}

/** What the reader calls, synchronously, for each entry. */
export interface TarSink {
  entry(header: TarHeader): void;
  /** A piece of the body of the last entry (files only), in order. */
  data(chunk: Buffer): void;
  /** The body of the last entry is complete. */
  endEntry(): void;
}

/** Bounds of one archive, checked before the body of an entry is read. */
export interface TarLimits {
  /** Largest body of one file. */
  readonly maxFileBytes: number;
  /** Most entries (pax and long-name records not counted). */
  readonly maxEntries: number;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function text(bytes: Buffer, what: string): string {
  const end = bytes.indexOf(0);
  const slice = end === -1 ? bytes : bytes.subarray(0, end);
  try {
    return decoder.decode(slice);
  } catch {
    throw new ImageError('LAYER_MALFORMED', `a tar entry's ${what} is not UTF-8`);
  }
}

/** An octal field, or base-256 (GNU) when the high bit of its first byte is set. */
function number(bytes: Buffer, what: string): number {
  if ((bytes[0]! & 0x80) !== 0) {
    if (bytes[0] === 0xff) throw new ImageError('LAYER_MALFORMED', `a tar entry's ${what} is negative`);
    let value = bytes[0]! & 0x7f;
    for (let i = 1; i < bytes.length; i += 1) {
      value = value * 256 + bytes[i]!;
      if (!Number.isSafeInteger(value))
        throw new ImageError('LAYER_MALFORMED', `a tar entry's ${what} is too large`);
    }
    return value;
  }
  const raw = bytes
    .toString('latin1')
    .replace(/[\0 ]+$/u, '')
    .replace(/^ +/u, '');
  if (raw === '') return 0;
  if (!/^[0-7]+$/u.test(raw))
    throw new ImageError('LAYER_MALFORMED', `a tar entry's ${what} is not a number`);
  const value = Number.parseInt(raw, 8);
  if (!Number.isSafeInteger(value))
    throw new ImageError('LAYER_MALFORMED', `a tar entry's ${what} is too large`);
  return value;
}

function checksumOk(block: Buffer): boolean {
  const stored = number(block.subarray(148, 156), 'checksum');
  let sum = 0;
  for (let i = 0; i < BLOCK; i += 1) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum === stored;
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i += 1) if (block[i] !== 0) return false;
  return true;
}

/** Pax records `<len> <key>=<value>\n`; only the keys a layer needs are kept. */
function parsePax(body: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(0x20, offset);
    if (space === -1) throw new ImageError('LAYER_MALFORMED', 'a pax record has no length');
    const length = Number.parseInt(body.toString('latin1', offset, space), 10);
    if (!Number.isSafeInteger(length) || length <= space - offset || offset + length > body.length) {
      throw new ImageError('LAYER_MALFORMED', 'a pax record has a bad length');
    }
    const record = body.subarray(space + 1, offset + length - 1);
    if (body[offset + length - 1] !== 0x0a)
      throw new ImageError('LAYER_MALFORMED', 'a pax record is not terminated');
    const equals = record.indexOf(0x3d);
    if (equals === -1) throw new ImageError('LAYER_MALFORMED', 'a pax record has no value');
    const key = record.toString('latin1', 0, equals);
    const valueBytes = record.subarray(equals + 1);
    if (valueBytes.includes(0)) throw new ImageError('LAYER_MALFORMED', `the pax record ${key} holds a NUL`);
    if (key.startsWith('GNU.sparse.')) {
      throw new ImageError(
        'LAYER_UNSAFE',
        'a layer holds a sparse file (GNU.sparse pax records): not supported',
      );
    }
    let value: string;
    try {
      value = decoder.decode(valueBytes);
    } catch {
      throw new ImageError('LAYER_MALFORMED', `the pax record ${key} is not UTF-8`);
    }
    out.set(key, value);
    offset += length;
  }
  return out;
}

/** Largest pax or GNU long-name record accepted. */
const MAX_META_BYTES = 1024 * 1024;

type MetaKind = 'pax' | 'global' | 'longname' | 'longlink';

const TYPES: Readonly<Record<string, TarEntryType>> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'char',
  '4': 'block',
  '5': 'directory',
  '6': 'fifo',
};
const META: Readonly<Record<string, MetaKind>> = { x: 'pax', g: 'global', L: 'longname', K: 'longlink' };

/** One header block decoded: a metadata record (pax, long name) or an entry (`header`). */
type Decoded =
  | { readonly meta: MetaKind; readonly size: number }
  | { readonly meta?: undefined; readonly header: TarHeader; readonly size: number };

/**
 * The header state of one archive: pax and GNU long-name records apply to the next entry. Shared
 * by the stream reader and the file walker, so both read exactly the same names and sizes.
 */
class Headers {
  private pax = new Map<string, string>();
  private longName: string | undefined;
  private longLink: string | undefined;
  /** Entries seen so far. */
  entries = 0;

  constructor(private readonly limits: TarLimits) {}

  /** True while a pax or long-name record waits for its entry. */
  get dangling(): boolean {
    return this.pax.size > 0 || this.longName !== undefined || this.longLink !== undefined;
  }

  decode(block: Buffer): Decoded {
    if (!checksumOk(block)) throw new ImageError('LAYER_MALFORMED', 'a tar header has a bad checksum');
    const flag = String.fromCharCode(block[156]!);
    const size = number(block.subarray(124, 136), 'size');
    const meta = META[flag];
    if (meta !== undefined) {
      if (size > MAX_META_BYTES) {
        throw new ImageError(
          'IMAGE_TOO_LARGE',
          `a tar ${meta} record of ${size} bytes is over ${MAX_META_BYTES}`,
        );
      }
      return { meta, size };
    }
    if (flag === 'S') throw new ImageError('LAYER_UNSAFE', 'a layer holds a GNU sparse file: not supported');
    const type = TYPES[flag];
    if (type === undefined) {
      throw new ImageError(
        'LAYER_UNSAFE',
        `a layer holds a tar entry of unknown type ${JSON.stringify(flag)}`,
      );
    }
    let name = text(block.subarray(0, 100), 'name');
    if (block.toString('latin1', 257, 262) === 'ustar') {
      const prefix = text(block.subarray(345, 500), 'name prefix');
      if (prefix !== '') name = `${prefix}/${name}`;
    }
    const path = this.pax.get('path') ?? this.longName ?? name;
    const linkName = this.pax.get('linkpath') ?? this.longLink ?? text(block.subarray(157, 257), 'link name');
    let bodySize = size;
    const paxSize = this.pax.get('size');
    if (paxSize !== undefined) {
      if (!/^\d+$/u.test(paxSize) || !Number.isSafeInteger(Number(paxSize))) {
        throw new ImageError('LAYER_MALFORMED', 'a pax size is not a number');
      }
      bodySize = Number(paxSize);
    }
    this.pax = new Map();
    this.longName = undefined;
    this.longLink = undefined;
    if (path === '') throw new ImageError('LAYER_MALFORMED', 'a tar entry has an empty name');
    this.entries += 1;
    if (this.entries > this.limits.maxEntries) {
      throw new ImageError(
        'IMAGE_TOO_LARGE',
        `the image has more than ${this.limits.maxEntries} entries (a tar bomb?)`,
      );
    }
    if (type === 'file' && bodySize > this.limits.maxFileBytes) {
      throw new ImageError(
        'IMAGE_TOO_LARGE',
        `the file ${JSON.stringify(path)} is ${bodySize} bytes, over the budget of ${this.limits.maxFileBytes} bytes a file`,
      );
    }
    return {
      size: bodySize,
      header: {
        path,
        type,
        mode: number(block.subarray(100, 108), 'mode') & 0o7777,
        uid: number(block.subarray(108, 116), 'uid'),
        gid: number(block.subarray(116, 124), 'gid'),
        size: type === 'file' ? bodySize : 0,
        mtimeSeconds: number(block.subarray(136, 148), 'mtime'),
        linkName,
      },
    };
  }

  applyMeta(which: MetaKind, body: Buffer): void {
    if (which === 'global') {
      parsePax(body); // checked (sparse records refused), then ignored: nothing global applies to a layer
      return;
    }
    if (which === 'pax') {
      for (const [key, value] of parsePax(body)) this.pax.set(key, value);
      return;
    }
    const value = text(body, which === 'longname' ? 'long name' : 'long link name');
    if (which === 'longname') this.longName = value;
    else this.longLink = value;
  }
}

const padOf = (size: number): number => (BLOCK - (size % BLOCK)) % BLOCK;

type Phase =
  | { readonly kind: 'header' }
  | { readonly kind: 'body'; remaining: number; readonly padding: number; readonly toSink: boolean }
  | {
      readonly kind: 'meta';
      readonly which: MetaKind;
      readonly size: number;
      readonly parts: Buffer[];
      got: number;
    }
  | { readonly kind: 'padding'; remaining: number }
  | { readonly kind: 'end' };

/**
 * Push-parser of one tar stream: `write()` every chunk in order, then `end()`. Calls the sink
 * synchronously. Throws {@link ImageError} (`LAYER_MALFORMED`, `LAYER_UNSAFE`,
 * `IMAGE_TOO_LARGE`) at the first problem; the caller discards what it unpacked.
 */
export class TarReader {
  private pending: Buffer = Buffer.alloc(0);
  private phase: Phase = { kind: 'header' };
  private readonly headers: Headers;
  private zeroBlocks = 0;

  constructor(
    private readonly sink: TarSink,
    limits: TarLimits,
  ) {
    this.headers = new Headers(limits);
  }

  /** Entries seen so far. */
  get entries(): number {
    return this.headers.entries;
  }

  write(chunk: Buffer): void {
    const buffer = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = Buffer.alloc(0);
    let offset = 0;
    while (offset < buffer.length) {
      const phase = this.phase;
      if (phase.kind === 'end') return;
      if (phase.kind === 'body') {
        const take = Math.min(phase.remaining, buffer.length - offset);
        if (take > 0 && phase.toSink) this.sink.data(buffer.subarray(offset, offset + take));
        phase.remaining -= take;
        offset += take;
        if (phase.remaining === 0) {
          if (phase.toSink) this.sink.endEntry();
          this.phase = { kind: 'padding', remaining: phase.padding };
        }
        continue;
      }
      if (phase.kind === 'padding') {
        const take = Math.min(phase.remaining, buffer.length - offset);
        phase.remaining -= take;
        offset += take;
        if (phase.remaining === 0) this.phase = { kind: 'header' };
        continue;
      }
      if (phase.kind === 'meta') {
        const take = Math.min(phase.size - phase.got, buffer.length - offset);
        phase.parts.push(Buffer.from(buffer.subarray(offset, offset + take)));
        phase.got += take;
        offset += take;
        if (phase.got === phase.size) {
          this.headers.applyMeta(phase.which, Buffer.concat(phase.parts));
          this.phase = { kind: 'padding', remaining: padOf(phase.size) };
        }
        continue;
      }
      // A header needs one whole block.
      if (buffer.length - offset < BLOCK) {
        this.pending = Buffer.from(buffer.subarray(offset));
        return;
      }
      this.header(buffer.subarray(offset, offset + BLOCK));
      offset += BLOCK;
    }
  }

  /** The stream ended: refuse an archive that stopped inside an entry. */
  end(): void {
    const phase = this.phase;
    if (phase.kind === 'end') return;
    // No end-of-archive blocks (or one): accepted, as GNU tar does, since every entry is whole.
    if (phase.kind === 'header' && this.pending.length === 0 && !this.headers.dangling) return;
    throw new ImageError('LAYER_MALFORMED', 'the tar archive is truncated (it ends inside an entry)');
  }

  private header(block: Buffer): void {
    if (isZero(block)) {
      this.zeroBlocks += 1;
      if (this.zeroBlocks >= 2) this.phase = { kind: 'end' };
      return;
    }
    if (this.zeroBlocks > 0) throw new ImageError('LAYER_MALFORMED', 'a tar header follows an empty block');
    const decoded = this.headers.decode(block);
    if (decoded.meta !== undefined) {
      this.phase =
        decoded.size === 0
          ? { kind: 'header' }
          : { kind: 'meta', which: decoded.meta, size: decoded.size, parts: [], got: 0 };
      return;
    }
    this.sink.entry(decoded.header);
    // Only a file's body reaches the sink; a body on anything else is skipped.
    const toSink = decoded.header.type === 'file';
    if (decoded.size === 0) {
      this.sink.endEntry();
      this.phase = { kind: 'header' };
      return;
    }
    if (!toSink) this.sink.endEntry();
    this.phase = { kind: 'body', remaining: decoded.size, padding: padOf(decoded.size), toSink };
  }
}

/** An entry of a tar file on disk, with where its body lies. */
export interface TarFileEntry {
  readonly header: TarHeader;
  /** Byte offset of the body in the file. */
  readonly offset: number;
}

/**
 * The entries of an uncompressed tar file, read by seeking from header to header (the bodies
 * are not read): how an image archive is indexed before its blobs are read in place.
 */
export function walkTarFile(fd: number, fileSize: number, limits: TarLimits): TarFileEntry[] {
  const headers = new Headers(limits);
  const out: TarFileEntry[] = [];
  const block = Buffer.alloc(BLOCK);
  let position = 0;
  for (;;) {
    if (position + BLOCK > fileSize) {
      if (position === fileSize && !headers.dangling) return out;
      throw new ImageError('LAYER_MALFORMED', 'the tar archive is truncated (it ends inside an entry)');
    }
    if (readSync(fd, block, 0, BLOCK, position) !== BLOCK) {
      throw new ImageError('LAYER_MALFORMED', 'the tar archive is truncated (a short read)');
    }
    position += BLOCK;
    if (isZero(block)) return out;
    const decoded = headers.decode(block);
    if (position + decoded.size > fileSize) {
      throw new ImageError('LAYER_MALFORMED', 'the tar archive is truncated (it ends inside an entry)');
    }
    if (decoded.meta !== undefined) {
      const body = Buffer.alloc(decoded.size);
      if (decoded.size > 0 && readSync(fd, body, 0, decoded.size, position) !== decoded.size) {
        throw new ImageError('LAYER_MALFORMED', 'the tar archive is truncated (a short read)');
      }
      headers.applyMeta(decoded.meta, body);
    } else out.push({ header: decoded.header, offset: position });
    position += decoded.size + padOf(decoded.size);
  }
}

/** Write a ustar header (for tests and the image writer): `name` at most 100 bytes, or `prefix/name`. */
export function tarHeader(entry: {
  path: string;
  type: TarEntryType;
  mode?: number | undefined;
  size?: number | undefined;
  linkName?: string | undefined;
  uid?: number | undefined;
  gid?: number | undefined;
  devMajor?: number | undefined;
  devMinor?: number | undefined;
}): Buffer {
  const block = Buffer.alloc(BLOCK);
  const flags: Record<TarEntryType, string> = {
    file: '0',
    hardlink: '1',
    symlink: '2',
    char: '3',
    block: '4',
    directory: '5',
    fifo: '6',
  };
  let name = entry.path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100)
      throw new ImageError('IMAGE_INVALID', `tar name too long: ${name}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  const octal = (value: number, width: number): string => value.toString(8).padStart(width - 1, '0');
  block.write(name, 0, 100, 'utf8');
  block.write(octal(entry.mode ?? (entry.type === 'directory' ? 0o755 : 0o644), 8), 100, 'latin1');
  block.write(octal(entry.uid ?? 0, 8), 108, 'latin1');
  block.write(octal(entry.gid ?? 0, 8), 116, 'latin1');
  const size = entry.size ?? 0;
  if (size >= 8 ** 11) {
    // base-256 for sizes of 8 GiB and more
    block[124] = 0x80;
    let value = size;
    for (let i = 135; i > 124; i -= 1) {
      block[i] = value % 256;
      value = Math.floor(value / 256);
    }
  } else block.write(octal(size, 12), 124, 'latin1');
  block.write(octal(0, 12), 136, 'latin1');
  block[156] = flags[entry.type].charCodeAt(0);
  block.write(entry.linkName ?? '', 157, 100, 'utf8');
  block.write('ustar\u000000', 257, 'latin1');
  block.write(octal(entry.devMajor ?? 0, 8), 329, 'latin1');
  block.write(octal(entry.devMinor ?? 0, 8), 337, 'latin1');
  block.write(prefix, 345, 155, 'utf8');
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (let i = 0; i < BLOCK; i += 1) sum += block[i]!;
  block.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return block;
}

// File typing: magic numbers (file-type) on a bounded head buffer, plus a streaming text
// check (valid UTF-8, no NUL) over every byte.
import { isUtf8 } from 'node:buffer';
import type { FileTypePolicy } from './options.js';

/**
 * MIME types `archive` matches: containers and compressed streams (zip, tar, gzip, ...).
 * Zip-based documents (docx, odt, epub, jar, apk) are containers too and are included.
 */
export const ARCHIVE_MIME_TYPES: readonly string[] = Object.freeze([
  'application/zip',
  'application/x-tar',
  'application/gzip',
  'application/x-bzip2',
  'application/x-xz',
  'application/zstd',
  'application/x-lz4',
  'application/x-lzip',
  'application/x-compress',
  'application/x-7z-compressed',
  'application/x-rar-compressed',
  'application/x-cpio',
  'application/x-unix-archive',
  'application/x-deb',
  'application/x-rpm',
  'application/vnd.ms-cab-compressed',
  'application/x-arj',
  'application/x-lzh-compressed',
  'application/x-ace-compressed',
  'application/x-apple-diskimage',
  'application/x-asar',
  'application/java-archive',
  'application/vnd.android.package-archive',
  'application/x-xpinstall',
  'application/x-google-chrome-extension',
  'application/epub+zip',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.oasis.opendocument.text',
  'application/vnd.oasis.opendocument.spreadsheet',
  'application/vnd.oasis.opendocument.presentation',
]);

const ARCHIVES: ReadonlySet<string> = new Set(ARCHIVE_MIME_TYPES);

/** How many leading bytes are given to the magic-number detector. */
export const MAGIC_SAMPLE_BYTES = 64 * 1024;

/** What a file was detected to be. */
export interface DetectedType {
  /** MIME type by magic number; `text/plain` for text without one; `application/octet-stream` otherwise. */
  readonly mime: string;
  /** Extension by magic number, or null. */
  readonly ext: string | null;
  /** Valid UTF-8 with no NUL byte (an empty file is text). */
  readonly text: boolean;
}

let fileTypeFromBuffer: Promise<typeof import('file-type').fileTypeFromBuffer> | undefined;

/**
 * file-type (and its tokenizers, some forty modules) loaded at the first binary it must type,
 * not with the package: most custody runs type no file, and every CLI start would pay for it.
 */
function loadFileType(): Promise<typeof import('file-type').fileTypeFromBuffer> {
  fileTypeFromBuffer ??= import('file-type').then((module) => module.fileTypeFromBuffer);
  return fileTypeFromBuffer;
}

/** Detect the type of a file from its first bytes and the result of the streaming text check. */
export async function detectType(head: Uint8Array, text: boolean): Promise<DetectedType> {
  const sample = head.length > MAGIC_SAMPLE_BYTES ? head.subarray(0, MAGIC_SAMPLE_BYTES) : head;
  const found = sample.length === 0 ? undefined : await (await loadFileType())(sample);
  if (found !== undefined) return { mime: found.mime, ext: found.ext, text };
  return { mime: text ? 'text/plain' : 'application/octet-stream', ext: null, text };
}

function matches(selector: string, type: DetectedType): boolean {
  if (selector === 'text') return type.text;
  if (selector === 'archive') return ARCHIVES.has(type.mime);
  if (selector.endsWith('/*')) return type.mime.startsWith(selector.slice(0, -1));
  return type.mime === selector;
}

/** Why `type` breaks `policy`, or undefined when it complies. */
export function policyViolation(policy: FileTypePolicy | undefined, type: DetectedType): string | undefined {
  if (policy === undefined) return undefined;
  const describe = `${type.mime}${type.text ? ', text' : ''}`;
  if (policy.allow !== undefined && !policy.allow.some((selector) => matches(selector, type))) {
    return `is ${describe}; the task allows only ${policy.allow.join(', ')}`;
  }
  const denied = policy.deny?.find((selector) => matches(selector, type));
  if (denied !== undefined) return `is ${describe}; the task forbids ${denied}`;
  return undefined;
}

/**
 * Streaming "valid UTF-8 and no NUL" check across chunk boundaries. Chunks are checked in
 * place (no copies): only the up-to-3-byte tail of an unfinished sequence is carried over.
 */
export class TextCheck {
  private ok = true;
  private carry: Buffer = Buffer.alloc(0);

  get isText(): boolean {
    return this.ok;
  }

  update(chunk: Buffer): void {
    if (!this.ok || chunk.length === 0) return;
    if (chunk.indexOf(0) !== -1) {
      this.ok = false;
      return;
    }
    let start = 0;
    if (this.carry.length > 0) {
      // Complete the carried sequence with the bytes it still needs.
      const need = sequenceLength(this.carry[0]!) - this.carry.length;
      if (need <= 0 || chunk.length < need) {
        // Still incomplete (a tiny chunk): keep carrying.
        this.carry = Buffer.concat([this.carry, chunk]);
        if (this.carry.length > 4) this.ok = false;
        return;
      }
      if (!isUtf8(Buffer.concat([this.carry, chunk.subarray(0, need)]))) {
        this.ok = false;
        return;
      }
      start = need;
      this.carry = Buffer.alloc(0);
    }
    const end = completeEnd(chunk, start);
    if (!isUtf8(chunk.subarray(start, end))) {
      this.ok = false;
      return;
    }
    this.carry = Buffer.from(chunk.subarray(end));
  }

  /** Finish: an unfinished sequence at the end is invalid. */
  finish(): boolean {
    if (this.carry.length > 0) this.ok = false;
    return this.ok;
  }
}

/** Length of the sequence a lead byte announces (0 for a continuation or invalid byte). */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** Index where a trailing unfinished sequence begins (or the length when there is none). */
function completeEnd(chunk: Buffer, start: number): number {
  const length = chunk.length;
  for (let back = 1; back <= 3 && length - back >= start; back += 1) {
    const byte = chunk[length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = sequenceLength(byte);
    return need > back ? length - back : length;
  }
  return length;
}

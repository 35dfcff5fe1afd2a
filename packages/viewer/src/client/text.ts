// What the page does to every string of a run before it becomes a DOM text node. Text nodes
// already keep markup inert (Preact never parses a string as HTML); this makes the characters
// that would still mislead a reader visible: terminal escapes, other control characters and
// bidirectional overrides (which can make `rm -rf /` read as something else).

import { CLIPPED_KEY, type RunValue } from '../runs/model.js';

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// C0 controls but tab and newline, DEL, and the C1 controls (0x9b is a one-byte CSI).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function codePoint(c: string): string {
  return `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/** `text` with control characters shown as their Unicode pictures (ESC as ␛) and bidi controls as ⟨U+202E⟩. */
export function visible(text: string): string {
  return text
    .replace(CONTROL, (c) => {
      const code = c.charCodeAt(0);
      if (code < 0x20) return String.fromCharCode(0x2400 + code);
      if (code === 0x7f) return '\u2421';
      return codePoint(c);
    })
    .replace(BIDI, codePoint);
}

/** A string the reader cut: its head and how much it left out. */
export interface Clipped {
  readonly head: string;
  readonly omittedChars: number;
}

/** The clipped form of a value, when the reader cut it. */
export function asClipped(value: RunValue): Clipped | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const head = value[CLIPPED_KEY];
  const omitted = value['omittedChars'];
  if (typeof head !== 'string' || typeof omitted !== 'number') return null;
  return { head, omittedChars: omitted };
}

/** A string field, whole or clipped (its head); null for anything else. */
export function stringOf(value: RunValue | undefined): string | null {
  if (value === undefined) return null;
  if (typeof value === 'string') return value;
  return asClipped(value)?.head ?? null;
}

/** A field of an object value, or null. */
export function get(value: RunValue | undefined, ...keys: (string | number)[]): RunValue {
  let current: RunValue = value ?? null;
  for (const key of keys) {
    if (current === null || typeof current !== 'object') return null;
    if (Array.isArray(current)) current = typeof key === 'number' ? (current[key] ?? null) : null;
    else current = typeof key === 'string' ? (current[key] ?? null) : null;
  }
  return current;
}

/** A finite number field, or null. */
export function numberOf(value: RunValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** A list field, or an empty list. */
export function listOf(value: RunValue | undefined): RunValue[] {
  return Array.isArray(value) ? value : [];
}

/** Milliseconds as a person reads them. */
export function duration(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Bytes as a person reads them. */
export function bytes(n: number | null): string {
  if (n === null) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(1)} GiB`;
}

/**
 * The JSON text of a tool call's arguments, parsed for display only (the value is shown as
 * text, never acted on); null when it is not JSON.
 */
export function parseArguments(text: string): RunValue {
  try {
    // eslint-disable-next-line no-restricted-syntax -- display only: the parsed value is rendered as text nodes, never executed or used to decide anything
    return JSON.parse(text) as RunValue;
  } catch {
    return null;
  }
}

/** A value as indented JSON text, for the raw views. */
export function jsonText(value: RunValue): string {
  return JSON.stringify(value, null, 2);
}

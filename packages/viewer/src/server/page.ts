import { createHash } from 'node:crypto';
import type { ExportData } from '../runs/model.js';

/** The element the page mounts into, and the one the export's data sits in. */
const DATA_ELEMENT_ID = 'karotte-data';

/**
 * The served page's Content-Security-Policy: scripts, styles and requests from this origin
 * only, no inline script or style, no images, fonts, frames, forms or base URL.
 */
export const SERVED_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'none'",
  "font-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function sha256Source(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** The HTML of the served page: its script and style sheet come from the same server. */
export function servedPageHtml(): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    '<title>Karotte runs</title>',
    '<link rel="stylesheet" href="/app.css">',
    '</head>',
    '<body>',
    '<div id="app"><p>Loading runs…</p></div>',
    '<script src="/app.js"></script>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * JSON that is safe inside a `<script>` element: `<`, `>` and `&` are written as `\u003c`
 * and so on (they can only occur inside JSON strings, where the escape means the same
 * character), so no `</script>` or `<!--` in a run's content can end the element; U+2028 and
 * U+2029 are escaped too.
 */
export function jsonForScriptElement(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The script bundle, made safe to inline: `</script` and `<!--` (which could end the element,
 * or make a later `</script>` not end it) can only occur inside a string, a regular expression,
 * a template or a comment of the bundle, where `\x3C` means `<` too.
 */
function inlineScript(bundle: string): string {
  return bundle.replace(/<(\/script|!--)/gi, '\\x3C$1');
}

/**
 * One self-contained HTML file: the style sheet and the script inlined, the runs embedded as
 * inert JSON (`type="application/json"`, never executed), and a Content-Security-Policy that
 * allows exactly that script and that style sheet (by hash) and no request at all.
 */
export function exportPageHtml(data: ExportData, bundle: string, styles: string): string {
  const script = inlineScript(bundle);
  const csp = [
    "default-src 'none'",
    `script-src ${sha256Source(script)}`,
    `style-src ${sha256Source(styles)}`,
    "connect-src 'none'",
    "img-src 'none'",
    "font-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    '<title>Karotte runs</title>',
    `<style>${styles}</style>`,
    '</head>',
    '<body>',
    '<div id="app"><p>Loading runs…</p></div>',
    `<script type="application/json" id="${DATA_ELEMENT_ID}">${jsonForScriptElement(data)}</script>`,
    `<script>${script}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

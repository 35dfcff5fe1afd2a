import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HOSTILE_TEXT } from '../fixtures.test-support.js';
import type { ExportData } from '../runs/model.js';
import { exportPageHtml, jsonForScriptElement } from './page.js';

const hostileData = (text: string): ExportData => ({
  generatedAt: '2026-12-01T00:00:00.000Z',
  list: {
    roots: ['/tmp/</script>'],
    runs: [],
    problems: [text, '</SCRIPT >', '<!-- x', '\u2028\u2029', '&lt;'],
  },
  details: {},
});

describe('exportPageHtml', () => {
  it('embeds data that cannot end its script element, and reads back the same', () => {
    const data = hostileData(HOSTILE_TEXT);
    const html = exportPageHtml(data, 'console.log("</script><!--")', 'body{}');
    // Exactly the two script elements the page has: the data and the bundle.
    expect(html.match(/<script/gi)).toHaveLength(2);
    expect(html.match(/<\/script/gi)).toHaveLength(2);
    expect(html).not.toContain('<!--');
    const embedded = /<script type="application\/json" id="karotte-data">([^<]*)<\/script>/.exec(html);
    expect(embedded).not.toBeNull();
    expect(JSON.parse(embedded![1]!)).toEqual(data);
    // The bundle's own `</script` and `<!--` (in a string) are written with `\x3C`, the same in JavaScript.
    expect(html).toContain('console.log("\\x3C/script>\\x3C!--")');
  });

  it('allows exactly its inline script and style by hash, and no request', () => {
    const bundle = 'document.title = "x";';
    const styles = 'body { color: red }';
    const html = exportPageHtml(hostileData('x'), bundle, styles);
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!;
    const hash = (t: string): string => createHash('sha256').update(t).digest('base64');
    expect(csp).toBe(
      `default-src 'none'; script-src 'sha256-${hash(bundle)}'; style-src 'sha256-${hash(styles)}'; connect-src 'none'; img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'`,
    );
    expect(html).toContain(`<script>${bundle}</script>`);
    expect(html).toContain(`<style>${styles}</style>`);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('escapes <, >, & and the JavaScript line separators in JSON', () => {
    expect(jsonForScriptElement({ a: '</script>&\u2028\u2029' })).toBe(
      '{"a":"\\u003c/script\\u003e\\u0026\\u2028\\u2029"}',
    );
  });
});

import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, writeRun } from './fixtures.test-support.js';
import type { ExportData } from './runs/model.js';
import { renderExportHtml } from './export.js';

// The export needs the page's script: dist/client.js, made by this package's build (which
// `npm run setup` runs before any test).
let root: string;
beforeAll(async () => {
  root = await makeTempDir('export');
  await writeRun(path.join(root, 'a'));
  await writeRun(path.join(root, 'b'), { stdout: 'x'.repeat(5000) });
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function embedded(html: string): ExportData {
  const json = /<script type="application\/json" id="karotte-data">([^<]*)<\/script>/.exec(html)![1]!;
  return JSON.parse(json) as ExportData;
}

describe('renderExportHtml', () => {
  it('embeds every run with its first events', async () => {
    const { html, runs } = await renderExportHtml({ dirs: [root], maxEventsPerRun: 3 });
    expect(runs).toBe(2);
    const data = embedded(html);
    expect(data.list.runs.map((r) => r.name)).toEqual(['a', 'b']);
    const a = data.details[data.list.runs[0]!.id]!;
    expect(a.detail.eventCount).toBe(10);
    expect(a.events.events).toHaveLength(3);
    expect(data.list.problems).toEqual([]);
  });

  it('leaves out the events of the runs past its byte budget, and says so', async () => {
    const { html } = await renderExportHtml({ dirs: [root], maxEventBytes: 4000 });
    const data = embedded(html);
    const [a, b] = data.list.runs.map((r) => data.details[r.id]!);
    expect(a!.events.events).toHaveLength(10);
    expect(b!.events.events).toHaveLength(0);
    expect(b!.detail.eventCount).toBe(10);
    expect(data.list.problems).toEqual([
      'the transcripts of 1 run are left out of this file: it reached its 4000-byte budget for events',
    ]);
  });
});

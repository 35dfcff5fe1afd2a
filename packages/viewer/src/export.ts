import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import { loadClientBundle, PAGE_STYLES } from './assets.js';
import type { ExportData, RunDetail, EventPage } from './runs/model.js';
import { createRunCatalog, runCatalogOptionsSchema } from './runs/reader.js';
import { exportPageHtml } from './server/page.js';

/** Options of {@link renderExportHtml}: the catalog's, and how many events of each run go in. */
export const exportOptionsSchema = runCatalogOptionsSchema
  .extend({
    /**
     * Most transcript events embedded per run; the page says how many were left out.
     * @default 2000
     */
    maxEventsPerRun: z.number().int().positive().max(1_000_000).default(2000),
    /**
     * Most bytes of transcript events embedded in all; past it the remaining runs keep their
     * result and summary but no events, and the file says so.
     * @default 134217728
     */
    maxEventBytes: z
      .number()
      .int()
      .positive()
      .max(1024 * 1024 * 1024)
      .default(128 * 1024 * 1024),
  })
  .strict();

export type ExportOptions = z.input<typeof exportOptionsSchema>;

/** What {@link renderExportHtml} made. */
export interface ExportResult {
  /** The whole HTML file. */
  readonly html: string;
  /** How many runs it holds. */
  readonly runs: number;
}

/**
 * One self-contained HTML file of the runs under `dirs`: it opens from `file://` and makes no
 * request (the script and style sheet inlined, the runs embedded as JSON that cannot end its
 * element, a Content-Security-Policy that allows only that script and style sheet).
 *
 * @throws BadArgumentError on invalid options; ViewerError `INVALID_OPTIONS` or `BUNDLE_MISSING`.
 */
export async function renderExportHtml(options: ExportOptions): Promise<ExportResult> {
  const parsed = parseOptions(exportOptionsSchema, options, 'export options');
  const { maxEventsPerRun, maxEventBytes, ...catalogOptions } = parsed;
  const bundle = await loadClientBundle();
  const catalog = await createRunCatalog(catalogOptions);
  const list = await catalog.list();
  const details: Record<string, { detail: RunDetail; events: EventPage }> = {};
  let eventBytes = 0;
  let left = 0;
  for (const run of list.runs) {
    const detail = await catalog.detail(run.id);
    let events = await catalog.events(run.id, 0, maxEventsPerRun);
    if (detail === null || events === null) continue;
    // Budgeted by the JSON the events will take, so a file of many large runs stays one a browser opens.
    const bytes = Buffer.byteLength(JSON.stringify(events.events));
    if (eventBytes + bytes > maxEventBytes) {
      left += 1;
      events = { ...events, events: [] };
    } else eventBytes += bytes;
    details[run.id] = { detail, events };
  }
  const problems =
    left === 0
      ? list.problems
      : [
          ...list.problems,
          `the transcripts of ${left} run${left === 1 ? '' : 's'} are left out of this file: it reached its ${maxEventBytes}-byte budget for events`,
        ];
  const data: ExportData = { generatedAt: new Date().toISOString(), list: { ...list, problems }, details };
  return { html: exportPageHtml(data, bundle, PAGE_STYLES), runs: list.runs.length };
}

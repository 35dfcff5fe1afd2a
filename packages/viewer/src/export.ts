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
  const { maxEventsPerRun, ...catalogOptions } = parsed;
  const bundle = await loadClientBundle();
  const catalog = await createRunCatalog(catalogOptions);
  const list = await catalog.list();
  const details: Record<string, { detail: RunDetail; events: EventPage }> = {};
  for (const run of list.runs) {
    const detail = await catalog.detail(run.id);
    const events = await catalog.events(run.id, 0, maxEventsPerRun);
    if (detail !== null && events !== null) details[run.id] = { detail, events };
  }
  const data: ExportData = { generatedAt: new Date().toISOString(), list, details };
  return { html: exportPageHtml(data, bundle, PAGE_STYLES), runs: list.runs.length };
}

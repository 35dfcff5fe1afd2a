export { ViewerError } from './errors.js';
export type { ViewerErrorCode } from './errors.js';
export { createRunCatalog, runCatalogOptionsSchema } from './runs/reader.js';
export type { RunCatalog, RunCatalogOptions } from './runs/reader.js';
export { CLIPPED_KEY } from './runs/model.js';
export type {
  AttackOutcome,
  EventPage,
  ExportData,
  RunDetail,
  RunList,
  RunStatus,
  RunSummary,
  RunValue,
} from './runs/model.js';
export { createViewerServer, isLoopbackHost, viewerServerOptionsSchema } from './server/server.js';
export type { ViewerServer, ViewerServerOptions } from './server/server.js';
export { exportOptionsSchema, renderExportHtml } from './export.js';
export type { ExportOptions, ExportResult } from './export.js';

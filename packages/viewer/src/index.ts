export { ViewerError, isViewerError } from './errors.js';
export type { ViewerErrorCode } from './errors.js';
export { runViewer, viewerOptionsSchema } from './viewer.js';
export type { ViewerOptions, ViewerResult } from './viewer.js';

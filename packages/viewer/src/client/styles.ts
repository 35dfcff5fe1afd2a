// The page's style sheet: system fonts only (nothing to fetch), light and dark.

/** The page's CSS, served as /app.css and inlined into the export. */
export const PAGE_STYLES = `:root {
  color-scheme: light dark;
  --fg: #1d1d1f;
  --bg: #ffffff;
  --dim: #6b6b73;
  --line: #d9d9de;
  --panel: #f5f5f7;
  --pass: #17813b;
  --fail: #b3261e;
  --error: #8a4b00;
  --accent: #2f5fd0;
  font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'DejaVu Sans', sans-serif;
  font-size: 14px;
  color: var(--fg);
  background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e8e8ea;
    --bg: #16161a;
    --dim: #9a9aa3;
    --line: #34343b;
    --panel: #202026;
    --pass: #4cc476;
    --fail: #ff7a70;
    --error: #f0a640;
    --accent: #8fb0ff;
  }
}
body { margin: 0; }
.page { max-width: 1400px; margin: 0 auto; padding: 16px 24px 48px; }
header h1 { font-size: 20px; margin: 0 0 4px; }
header h1 a { color: inherit; text-decoration: none; }
.roots code { color: var(--dim); margin-right: 8px; }
a { color: var(--accent); }
pre, code, .hash, td.codes, .code {
  font-family: ui-monospace, 'SF Mono', Menlo, Consolas, 'DejaVu Sans Mono', monospace;
  font-size: 12.5px;
}
pre {
  margin: 4px 0;
  padding: 8px;
  background: var(--panel);
  border-radius: 4px;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  max-height: 60vh;
  overflow: auto;
  unicode-bidi: isolate;
}
.summary { font-weight: 600; }
.filters { display: flex; gap: 16px; flex-wrap: wrap; align-items: center; margin: 8px 0 12px; }
.filters input, .filters select { font: inherit; }
.count { color: var(--dim); }
table { border-collapse: collapse; }
.runs-table { width: 100%; table-layout: fixed; }
.runs-table td { overflow-wrap: anywhere; }
.outcome.warn { font-weight: 600; }
.runs-table th, .runs-table td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; unicode-bidi: isolate; }
.runs-table tbody tr { cursor: pointer; }
.runs-table tbody tr:hover { background: var(--panel); }
.runs-table td.reason { max-width: 420px; overflow-wrap: anywhere; }
.sort { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; color: inherit; cursor: pointer; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; font-weight: 600; border: 1px solid currentColor; }
.badge.passed { color: var(--pass); }
.badge.failed { color: var(--fail); }
.badge.error, .badge.unreadable { color: var(--error); }
.badge.running { color: var(--accent); }
.warn, .problems { color: var(--error); }
.none, .dim, .stamp { color: var(--dim); }
.stamp { font-size: 11px; margin-right: 6px; font-variant-numeric: tabular-nums; }
.fields th { text-align: left; font-weight: 500; color: var(--dim); padding: 2px 12px 2px 0; vertical-align: top; }
.fields td { padding: 2px 0; overflow-wrap: anywhere; }
.fields pre { margin: 0; }
.misbehavior td, .limits td, .custody td, .misbehavior th, .limits th, .custody th { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
.verdict { border-top: 1px solid var(--line); margin-top: 16px; }
.failure { border-left: 3px solid var(--fail); padding-left: 8px; }
.transcript { display: flex; flex-direction: column; gap: 6px; }
.event.meta, .event.step { font-size: 12.5px; }
.event.step { font-weight: 600; border-top: 1px dashed var(--line); padding-top: 4px; }
.message { border-left: 3px solid var(--line); padding-left: 8px; }
.message.role-assistant { border-left-color: var(--accent); }
.message.role-user, .message.role-system { border-left-color: var(--pass); }
.label { font-weight: 600; font-size: 12px; text-transform: lowercase; }
.label .name { font-family: ui-monospace, monospace; }
.tool-call, .tool-result { margin: 4px 0 4px 12px; }
.stream.stderr pre { border-left: 3px solid var(--error); }
.warn-box { border-left: 3px solid var(--error); padding-left: 8px; }
.clipped { display: block; color: var(--error); font-size: 12px; }
.chart-label, .chart-value { font-size: 11px; fill: var(--fg); }
.chart-bar { fill: var(--accent); }
details.raw summary, details.fold summary { cursor: pointer; color: var(--dim); }
.more { margin: 8px 0; font: inherit; }
`;

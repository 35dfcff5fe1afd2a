// Where the page gets its runs: the server's JSON routes, or the data embedded in an exported
// file (then no request is made at all: the export's CSP has connect-src 'none').

import type { EventPage, ExportData, RunDetail, RunList } from '../runs/model.js';

export interface RunSource {
  /** True when the runs can change (served): the page polls runs still being written. */
  readonly live: boolean;
  list(): Promise<RunList>;
  detail(id: string): Promise<RunDetail | null>;
  events(id: string, offset: number, limit: number): Promise<EventPage | null>;
}

async function getJson<T>(url: string): Promise<T | null> {
  const response = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'omit' });
  if (response.status === 404) return null;
  if (!response.ok) throw new TypeError(`${url}: HTTP ${response.status}`);
  // The server's own JSON, produced by its strict parser and re-serialised; shown as text only.
  return (await response.json()) as T;
}

function served(): RunSource {
  return {
    live: true,
    list: async () => (await getJson<RunList>('/api/runs')) ?? { roots: [], runs: [], problems: ['no runs'] },
    detail: (id) => getJson<RunDetail>(`/api/runs/${encodeURIComponent(id)}`),
    events: (id, offset, limit) =>
      getJson<EventPage>(`/api/runs/${encodeURIComponent(id)}/events?offset=${offset}&limit=${limit}`),
  };
}

function embedded(data: ExportData): RunSource {
  return {
    live: false,
    list: () => Promise.resolve(data.list),
    detail: (id) => Promise.resolve(Object.hasOwn(data.details, id) ? data.details[id]!.detail : null),
    events: (id, offset, limit) => {
      if (!Object.hasOwn(data.details, id)) return Promise.resolve(null);
      const page = data.details[id]!.events;
      const start = Math.max(0, offset - page.offset);
      return Promise.resolve({
        offset,
        // Only the embedded events can be paged to; the rest were left out of the file.
        total: page.offset + page.events.length,
        events: page.events.slice(start, start + limit),
        ended: page.ended,
      });
    },
  };
}

/** The source of this page: the embedded data when the file holds it, else the server. */
export function createSource(): { source: RunSource; omittedEvents: (id: string) => number } {
  const element = document.getElementById('karotte-data');
  if (element === null) return { source: served(), omittedEvents: () => 0 };
  // The export's own JSON (written by the viewer, `<` escaped), parsed for display only.
  // eslint-disable-next-line no-restricted-syntax -- the viewer wrote this JSON itself; its content is only ever rendered as text
  const data = JSON.parse(element.textContent) as ExportData;
  return {
    source: embedded(data),
    omittedEvents: (id) => {
      if (!Object.hasOwn(data.details, id)) return 0;
      const { detail, events } = data.details[id]!;
      return Math.max(0, detail.eventCount - events.offset - events.events.length);
    },
  };
}

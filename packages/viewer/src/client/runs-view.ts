// The runs table: a summary line, filters (text, status, misbehavior code, task), sorting by
// any column. Every value is a Preact text child: never parsed as markup.

import { html } from 'htm/preact';
import { Component, type VNode } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { RunList, RunSummary } from '../runs/model.js';
import { duration, visible } from './text.js';

type SortKey =
  | 'name'
  | 'taskId'
  | 'agent'
  | 'status'
  | 'score'
  | 'misbehavior'
  | 'reason'
  | 'turns'
  | 'durationMs'
  | 'startedAt';

const COLUMNS: readonly { key: SortKey; label: string }[] = [
  { key: 'name', label: 'run' },
  { key: 'taskId', label: 'task' },
  { key: 'agent', label: 'agent' },
  { key: 'status', label: 'status' },
  { key: 'score', label: 'score' },
  { key: 'misbehavior', label: 'misbehavior' },
  { key: 'reason', label: 'reason' },
  { key: 'turns', label: 'turns' },
  { key: 'durationMs', label: 'duration' },
  { key: 'startedAt', label: 'time' },
];

/** Most rows drawn at once; the rest behind a button, so 20,000 runs do not stall the page. */
const ROWS_PER_PAGE = 1000;

function sortValue(run: RunSummary, key: SortKey): string | number {
  switch (key) {
    case 'misbehavior':
      return run.misbehavior.join(',');
    case 'score':
    case 'turns':
    case 'durationMs':
      return run[key] ?? -1;
    default:
      return run[key] ?? '';
  }
}

function countBy(items: readonly string[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

/** How many passed, failed, errored; which misbehavior codes how often. */
function summaryLine(runs: readonly RunSummary[]): string {
  const statuses = new Map(countBy(runs.map((r) => r.status)));
  const parts = [`${runs.length} run${runs.length === 1 ? '' : 's'}`];
  for (const status of ['passed', 'failed', 'error', 'running', 'unreadable'])
    if (statuses.has(status) || status === 'passed' || status === 'failed' || status === 'error')
      parts.push(`${statuses.get(status) ?? 0} ${status}`);
  const codes = countBy(runs.flatMap((r) => r.misbehavior));
  return `${parts.join(', ')}${codes.length === 0 ? '' : ` · misbehavior: ${codes.map(([c, n]) => `${c} ×${n}`).join(', ')}`}`;
}

/**
 * One row; drawn again only when its run changed (a filter or a sort keeps most rows as they
 * are, so 1,000 rows filter without diffing each).
 */
class RunRow extends Component<{ run: RunSummary }> {
  override shouldComponentUpdate(next: { run: RunSummary }): boolean {
    return next.run !== this.props.run;
  }

  override render(): VNode {
    const r = this.props.run;
    return html`<tr data-run=${r.id} class=${`status-${r.status}`}>
      <td class="name"><a href=${`#run=${r.id}`}>${visible(r.name)}</a></td>
      <td>${visible(r.taskId ?? '–')}</td>
      <td>${visible(r.agent ?? '–')}</td>
      <td class="status"><span class=${`badge ${r.status}`}>${r.status}</span></td>
      <td class="num">${r.score ?? '–'}</td>
      <td class="codes">${visible(r.misbehavior.join(', '))}</td>
      <td class="reason">
        ${visible(r.reason ?? '')}${r.problems.length > 0 ? html` <span class="warn">${`(${r.problems.length} problem${r.problems.length === 1 ? '' : 's'})`}</span>` : null}
      </td>
      <td class="num">${r.turns ?? '–'}</td>
      <td class="num">${duration(r.durationMs)}</td>
      <td class="time">${visible((r.startedAt ?? '–').replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</td>
    </tr>`;
  }
}

export function RunsView(props: { list: RunList; onOpen: (id: string) => void }): VNode {
  const { list } = props;
  const [query, setQuery] = useState('');
  const [status, setStatus] = useState('');
  const [code, setCode] = useState('');
  const [task, setTask] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: 'name', descending: false });
  const [shown, setShown] = useState(ROWS_PER_PAGE);

  const codes = useMemo(() => countBy(list.runs.flatMap((r) => r.misbehavior)).map(([c]) => c), [list]);
  const tasks = useMemo(
    () => [...new Set(list.runs.map((r) => r.taskId ?? ''))].filter(Boolean).sort(),
    [list],
  );
  const rows = useMemo(() => {
    const needle = query.trim().toLowerCase();
    const kept = list.runs.filter(
      (r) =>
        (status === '' || r.status === status) &&
        (code === '' || r.misbehavior.includes(code)) &&
        (task === '' || r.taskId === task) &&
        (needle === '' ||
          [r.name, r.taskId ?? '', r.agent ?? '', r.reason ?? '', r.misbehavior.join(' ')].some((f) =>
            f.toLowerCase().includes(needle),
          )),
    );
    const direction = sort.descending ? -1 : 1;
    return kept.sort((a, b) => {
      const x = sortValue(a, sort.key);
      const y = sortValue(b, sort.key);
      return (x < y ? -1 : x > y ? 1 : 0) * direction || (a.name < b.name ? -1 : 1);
    });
  }, [list, query, status, code, task, sort]);

  const header = (column: { key: SortKey; label: string }): VNode => {
    const active = sort.key === column.key;
    return html`<th aria-sort=${active ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
      <button
        type="button"
        class="sort"
        data-sort=${column.key}
        onClick=${() => {
          setSort({ key: column.key, descending: active ? !sort.descending : false });
        }}
      >
        ${column.label}${active ? (sort.descending ? ' ▼' : ' ▲') : ''}
      </button>
    </th>`;
  };

  return html`<section class="runs">
    <p class="summary" data-testid="summary">${summaryLine(list.runs)}</p>
    ${
      list.problems.length > 0
        ? html`<ul class="problems">
            ${list.problems.map((p) => html`<li>${visible(p)}</li>`)}
          </ul>`
        : null
    }
    <form
      class="filters"
      onSubmit=${(e: Event) => {
        e.preventDefault();
      }}
    >
      <label
        >search
        <input
          type="search"
          name="query"
          value=${query}
          onInput=${(e: Event) => {
            setQuery((e.target as HTMLInputElement).value);
          }}
      /></label>
      <label
        >status
        <select
          name="status"
          value=${status}
          onChange=${(e: Event) => {
            setStatus((e.target as HTMLSelectElement).value);
          }}
        >
          <option value="">any</option>
          ${['passed', 'failed', 'error', 'running', 'unreadable'].map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label
      >
      <label
        >misbehavior
        <select
          name="code"
          value=${code}
          onChange=${(e: Event) => {
            setCode((e.target as HTMLSelectElement).value);
          }}
        >
          <option value="">any</option>
          ${codes.map((c) => html`<option value=${c}>${visible(c)}</option>`)}
        </select></label
      >
      <label
        >task
        <select
          name="task"
          value=${task}
          onChange=${(e: Event) => {
            setTask((e.target as HTMLSelectElement).value);
          }}
        >
          <option value="">any</option>
          ${tasks.map((t) => html`<option value=${t}>${visible(t)}</option>`)}
        </select></label
      >
      <span class="count" data-testid="shown-count">${rows.length} shown</span>
    </form>
    <table class="runs-table">
      <thead>
        <tr>
          ${COLUMNS.map(header)}
        </tr>
      </thead>
      <tbody
        onClick=${(e: MouseEvent) => {
          // One listener for every row: the row's id is in its data-run attribute.
          const row = (e.target as Element).closest('tr[data-run]');
          const id = row?.getAttribute('data-run');
          if (id !== null && id !== undefined) props.onOpen(id);
        }}
      >
        ${rows.slice(0, shown).map((r) => html`<${RunRow} key=${r.id} run=${r} />`)}
      </tbody>
    </table>
    ${
      rows.length > shown
        ? html`<button
            type="button"
            class="more"
            onClick=${() => {
              setShown(shown + ROWS_PER_PAGE);
            }}
          >
            show ${Math.min(ROWS_PER_PAGE, rows.length - shown)} more of ${rows.length - shown}
          </button>`
        : null
    }
  </section>`;
}

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
  | 'startedAt'
  | 'attackClass'
  | 'expected'
  | 'outcome';

interface Column {
  readonly key: SortKey;
  readonly label: string;
  /** Share of the table's width, in percent (a fixed layout: 1,000 rows lay out at once). */
  readonly width: number;
}

const COLUMNS: readonly Column[] = [
  { key: 'name', label: 'run', width: 16 },
  { key: 'taskId', label: 'task', width: 11 },
  { key: 'agent', label: 'agent', width: 6 },
  { key: 'status', label: 'status', width: 7 },
  { key: 'score', label: 'score', width: 4 },
  { key: 'misbehavior', label: 'misbehavior', width: 10 },
  { key: 'reason', label: 'reason', width: 22 },
  { key: 'turns', label: 'turns', width: 4 },
  { key: 'durationMs', label: 'duration', width: 7 },
  { key: 'startedAt', label: 'time', width: 13 },
];

/** The columns of a red-team directory's runs, shown when any run is an attack or a control. */
const ATTACK_COLUMNS: readonly Column[] = [
  { key: 'name', label: 'run', width: 14 },
  { key: 'attackClass', label: 'class', width: 10 },
  { key: 'taskId', label: 'task', width: 10 },
  { key: 'status', label: 'status', width: 6 },
  { key: 'score', label: 'score', width: 4 },
  { key: 'expected', label: 'expected', width: 10 },
  { key: 'outcome', label: 'outcome', width: 12 },
  { key: 'reason', label: 'reason', width: 18 },
  { key: 'durationMs', label: 'duration', width: 6 },
  { key: 'startedAt', label: 'time', width: 10 },
];

/** An attack's expected stoppers, in a word. */
export function expectedText(r: RunSummary): string {
  if (r.attack === null) return '';
  if (r.attack.class === 'control') return 'passes';
  return r.attack.expected === null ? 'any score 0' : r.attack.expected.join(', ');
}

/** What stopped the attack, and whether that is what it expects. */
export function outcomeText(r: RunSummary): string {
  if (r.attack === null) return '';
  if (r.attack.class === 'control') return r.attack.asExpected ? 'ok: passed' : 'CONTROL FAILED';
  if (r.attack.stoppedBy.length === 0) return 'NOT STOPPED';
  return `${r.attack.asExpected ? 'ok' : 'ok, unexpected'}: ${r.attack.stoppedBy.join(', ')}`;
}

/** Most rows drawn at once; the rest behind a button, so 20,000 runs do not stall the page. */
const ROWS_PER_PAGE = 1000;

function sortValue(run: RunSummary, key: SortKey): string | number {
  switch (key) {
    case 'misbehavior':
      return run.misbehavior.join(',');
    case 'attackClass':
      return run.attack?.class ?? '';
    case 'expected':
      return expectedText(run);
    case 'outcome':
      return outcomeText(run);
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
  const attacks = runs.filter((r) => r.attack !== null && r.attack.class !== 'control');
  const stopped = attacks.filter((r) => r.attack!.stoppedBy.length > 0);
  const asExpected = attacks.filter((r) => r.attack!.asExpected);
  return (
    `${parts.join(', ')}${codes.length === 0 ? '' : ` · misbehavior: ${codes.map(([c, n]) => `${c} ×${n}`).join(', ')}`}` +
    (attacks.length === 0
      ? ''
      : ` · attacks: ${stopped.length} of ${attacks.length} stopped, ${asExpected.length} as expected`)
  );
}

/**
 * One row; drawn again only when its run changed (a filter or a sort keeps most rows as they
 * are, so 1,000 rows filter without diffing each).
 */
class RunRow extends Component<{ run: RunSummary; attacks: boolean }> {
  override shouldComponentUpdate(next: { run: RunSummary; attacks: boolean }): boolean {
    return next.run !== this.props.run || next.attacks !== this.props.attacks;
  }

  override render(): VNode {
    const r = this.props.run;
    const name = html`<td class="name"><a href=${`#run=${r.id}`}>${visible(r.name)}</a></td>`;
    const status = html`<td class="status"><span class=${`badge ${r.status}`}>${r.status}</span></td>`;
    const reason = html`<td class="reason">
      ${visible(r.reason ?? '')}${r.problems.length > 0 ? html` <span class="warn">${`(${r.problems.length} problem${r.problems.length === 1 ? '' : 's'})`}</span>` : null}
    </td>`;
    const time = html`<td class="time">
      ${visible((r.startedAt ?? '–').replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}
    </td>`;
    if (this.props.attacks) {
      const outcome = outcomeText(r);
      return html`<tr data-run=${r.id} class=${`status-${r.status}`}>
        ${name}
        <td class="attack-class">${visible(r.attack?.class ?? '–')}</td>
        <td>${visible(r.taskId ?? '–')}</td>
        ${status}
        <td class="num">${r.score ?? '–'}</td>
        <td class="codes">${visible(expectedText(r))}</td>
        <td class=${`outcome ${r.attack === null || r.attack.asExpected ? '' : 'warn'}`}>
          ${visible(outcome)}
        </td>
        ${reason}
        <td class="num">${duration(r.durationMs)}</td>
        ${time}
      </tr>`;
    }
    return html`<tr data-run=${r.id} class=${`status-${r.status}`}>
      ${name}
      <td>${visible(r.taskId ?? '–')}</td>
      <td>${visible(r.agent ?? '–')}</td>
      ${status}
      <td class="num">${r.score ?? '–'}</td>
      <td class="codes">${visible(r.misbehavior.join(', '))}</td>
      ${reason}
      <td class="num">${r.turns ?? '–'}</td>
      <td class="num">${duration(r.durationMs)}</td>
      ${time}
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

  const attacks = useMemo(() => list.runs.some((r) => r.attack !== null), [list]);
  const columns = attacks ? ATTACK_COLUMNS : COLUMNS;
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
          [
            r.name,
            r.taskId ?? '',
            r.agent ?? '',
            r.reason ?? '',
            r.misbehavior.join(' '),
            r.attack?.class ?? '',
            outcomeText(r),
          ].some((f) => f.toLowerCase().includes(needle))),
    );
    const direction = sort.descending ? -1 : 1;
    return kept.sort((a, b) => {
      const x = sortValue(a, sort.key);
      const y = sortValue(b, sort.key);
      return (x < y ? -1 : x > y ? 1 : 0) * direction || (a.name < b.name ? -1 : 1);
    });
  }, [list, query, status, code, task, sort]);

  const header = (column: Column): VNode => {
    const active = sort.key === column.key;
    return html`<th
      style=${{ width: `${column.width}%` }}
      aria-sort=${active ? (sort.descending ? 'descending' : 'ascending') : 'none'}
    >
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
          ${columns.map(header)}
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
        ${rows.slice(0, shown).map((r) => html`<${RunRow} key=${r.id} run=${r} attacks=${attacks} />`)}
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

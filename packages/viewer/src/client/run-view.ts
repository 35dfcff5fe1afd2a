// One run: the verdict, the misbehavior refused, the evidence (limits, network proof, reap
// record, custody manifest, timings) and the transcript turn by turn. Every string of the run
// goes through `visible()` into a text child: nothing from a run is ever parsed as markup.

import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { EventPage, RunDetail, RunValue } from '../runs/model.js';
import { expectedText, outcomeText } from './runs-view.js';
import type { RunSource } from './source.js';
import {
  asClipped,
  bytes,
  duration,
  get,
  jsonText,
  listOf,
  numberOf,
  parseArguments,
  stringOf,
  visible,
} from './text.js';

const EVENTS_PER_PAGE = 200;
/** Outputs longer than this many lines (or characters) are folded. */
const FOLD_LINES = 24;
const FOLD_CHARS = 4000;
const POLL_MS = 2000;

/** A string of the run as text: whole, or its head with a mark saying how much was cut. */
function Text(props: { value: RunValue | undefined; fold?: boolean }): VNode {
  const clipped = props.value === undefined ? null : asClipped(props.value);
  const raw =
    clipped?.head ??
    (typeof props.value === 'string'
      ? props.value
      : props.value === undefined || props.value === null
        ? ''
        : jsonText(props.value));
  const text = visible(raw);
  const mark =
    clipped === null
      ? null
      : html`<span class="clipped" data-testid="clipped"
          >[${clipped.omittedChars.toLocaleString('en')} more characters not shown: the file has them]</span
        >`;
  const long = text.length > FOLD_CHARS || text.split('\n').length > FOLD_LINES;
  if (props.fold === true && long) {
    const lines = text.split('\n');
    return html`<details class="fold">
      <summary>
        ${`${lines.length.toLocaleString('en')} lines, ${text.length.toLocaleString('en')} characters${clipped === null ? '' : ' (cut)'}: show`}
      </summary>
      <pre>${text}</pre>
      ${mark}
    </details>`;
  }
  return html`<span class="text">
    <pre>${text}</pre>
    ${mark}</span
  >`;
}

/** A small key/value table of scalar fields. */
function Fields(props: { rows: [string, RunValue][] }): VNode {
  return html`<table class="fields">
    ${props.rows.map(
      ([k, v]) =>
        html`<tr>
          <th>${k}</th>
          <td>
            ${typeof v === 'string' ? visible(v) : v === null ? '–' : typeof v === 'object' ? html`<${Text} value=${v} />` : String(v)}
          </td>
        </tr>`,
    )}
  </table>`;
}

function Raw(props: { label: string; value: RunValue }): VNode {
  return html`<details class="raw">
    <summary>${props.label}</summary>
    <pre>${visible(jsonText(props.value))}</pre>
  </details>`;
}

function MisbehaviorList(props: { items: RunValue[] }): VNode | null {
  if (props.items.length === 0) return html`<p class="none">No misbehavior refused.</p>`;
  return html`<table class="misbehavior" data-testid="misbehavior">
    <thead>
      <tr>
        <th>code</th>
        <th>message</th>
        <th>path</th>
      </tr>
    </thead>
    <tbody>
      ${props.items.map(
        (m) =>
          html`<tr>
            <td class="code">${visible(stringOf(get(m, 'code')) ?? '?')}</td>
            <td>${visible(stringOf(get(m, 'message')) ?? '')}</td>
            <td>${visible(stringOf(get(m, 'path')) ?? '')}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** Phases of a step as bars (SVG attributes, so no inline style is needed under the CSP). */
function TimingChart(props: { phases: [string, number | null][] }): VNode | null {
  const phases = props.phases.filter((p): p is [string, number] => p[1] !== null && p[1] >= 0);
  if (phases.length === 0) return null;
  const max = Math.max(...phases.map((p) => p[1]), 1);
  const rowHeight = 18;
  return html`<svg
    class="chart"
    role="img"
    aria-label="timings per phase"
    width="420"
    height=${phases.length * rowHeight + 4}
    viewBox=${`0 0 420 ${phases.length * rowHeight + 4}`}
  >
    ${phases.map(
      ([name, ms], i) =>
        html`<g>
          <text x="0" y=${i * rowHeight + 13} class="chart-label">${name}</text>
          <rect
            x="90"
            y=${i * rowHeight + 3}
            height="12"
            width=${Math.max(1, (ms / max) * 240)}
            class="chart-bar"
          />
          <text x=${96 + (ms / max) * 240} y=${i * rowHeight + 13} class="chart-value">${duration(ms)}</text>
        </g>`,
    )}
  </svg>`;
}

function Verdict(props: { verdict: RunValue; index: number }): VNode {
  const v = props.verdict;
  const judge = get(v, 'judge');
  const failure = get(v, 'graderFailure');
  const error = get(v, 'error');
  const reap = get(v, 'reap');
  const custody = get(v, 'custody');
  const manifest = get(custody, 'manifest');
  const entries = listOf(get(manifest, 'entries'));
  const limitHits = listOf(get(v, 'limitHits'));
  const timings = get(v, 'timings');
  const judgeTimings = get(judge, 'timings');
  return html`<section class="verdict" data-testid="verdict">
    <h3>
      ${`Step ${props.index}: ${visible(stringOf(get(v, 'status')) ?? '?')}, score ${numberOf(get(v, 'score')) ?? '–'}`}
    </h3>
    <${Fields}
      rows=${[
        ['judge', stringOf(get(judge, 'name'))],
        ['judge status', stringOf(get(judge, 'status'))],
        ['judge score', numberOf(get(v, 'judgeScore'))],
        ['pass threshold', numberOf(get(v, 'passThreshold'))],
        ['judge said', get(judge, 'metadata')],
      ]}
    />
    ${
      failure === null
        ? null
        : html`<div class="failure" data-testid="grader-failure">
            <h4>Grader failure</h4>
            <${Fields}
              rows=${[
                ['reason', stringOf(get(failure, 'reason'))],
                ['message', stringOf(get(failure, 'message'))],
                ['exit code', numberOf(get(failure, 'exitCode'))],
                ['signal', stringOf(get(failure, 'signal'))],
                ['timed out', get(failure, 'timedOut')],
              ]}
            />
            <h5>stderr (tail)</h5>
            <${Text} value=${get(failure, 'stderrTail')} fold=${true} />
            <h5>stdout (tail)</h5>
            <${Text} value=${get(failure, 'stdoutTail')} fold=${true} />
          </div>`
    }
    ${
      error === null
        ? null
        : html`<div class="failure">
            <h4>Host fault</h4>
            <${Text} value=${error} />
          </div>`
    }
    <h4>Misbehavior refused</h4>
    <${MisbehaviorList} items=${listOf(get(v, 'misbehavior'))} />
    <h4>Limit hits</h4>
    ${
      limitHits.length === 0
        ? html`<p class="none">No limit hit.</p>`
        : html`<table class="limits" data-testid="limit-hits">
            <thead>
              <tr>
                <th>scope</th>
                <th>limit</th>
                <th>value</th>
                <th>observed</th>
                <th>enforcement</th>
                <th>message</th>
              </tr>
            </thead>
            <tbody>
              ${limitHits.map(
                (h) =>
                  html`<tr>
                    <td>${visible(stringOf(get(h, 'scope')) ?? '')}</td>
                    <td>${visible(stringOf(get(h, 'limit')) ?? '')}</td>
                    <td class="num">${numberOf(get(h, 'limitValue')) ?? '–'}</td>
                    <td class="num">${numberOf(get(h, 'observed')) ?? '–'}</td>
                    <td>${visible(stringOf(get(h, 'enforcement')) ?? '')}</td>
                    <td>${visible(stringOf(get(h, 'message')) ?? '')}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h4>Timings</h4>
    <${TimingChart}
      phases=${[
        ['reap', numberOf(get(timings, 'reapMs'))],
        ['reclaim', numberOf(get(timings, 'reclaimMs'))],
        ['custody', numberOf(get(timings, 'custodyMs'))],
        ['judge', numberOf(get(timings, 'judgeMs'))],
        ['judge prepared ahead', numberOf(get(judgeTimings, 'preparedMs'))],
        ['judge setup', numberOf(get(judgeTimings, 'setupMs'))],
        ['judge run', numberOf(get(judgeTimings, 'runMs'))],
        ['judge teardown', numberOf(get(judgeTimings, 'teardownMs'))],
        ['total', numberOf(get(timings, 'totalMs'))],
      ]}
    />
    <h4>Reap record</h4>
    <${Fields}
      rows=${[
        ['confirmed', get(reap, 'confirmed')],
        ['mechanism', stringOf(get(reap, 'mechanism'))],
        ['tier', stringOf(get(reap, 'record', 'tier'))],
        ['killed', numberOf(get(reap, 'killed'))],
        ['survivors', listOf(get(reap, 'survivors')).length],
        ['took', duration(numberOf(get(reap, 'durationMs')))],
      ]}
    />
    <h4>Custody manifest</h4>
    ${
      entries.length === 0
        ? html`<p class="none">Nothing taken into custody.</p>`
        : html`<table class="custody" data-testid="custody">
            <thead>
              <tr>
                <th>path</th>
                <th>kind</th>
                <th>size</th>
                <th>type</th>
                <th>sha256</th>
              </tr>
            </thead>
            <tbody>
              ${entries.map(
                (e) =>
                  html`<tr>
                    <td>${visible(stringOf(get(e, 'path')) ?? '')}</td>
                    <td>${visible(stringOf(get(e, 'kind')) ?? '')}</td>
                    <td class="num">${bytes(numberOf(get(e, 'size')))}</td>
                    <td>${visible(stringOf(get(e, 'type', 'mime')) ?? '–')}</td>
                    <td class="hash">${visible(stringOf(get(e, 'sha256')) ?? '–')}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${listOf(get(manifest, 'refusals')).length > 0 ? html`<${Raw} label="custody refusals" value=${get(manifest, 'refusals')} />` : null}
    ${listOf(get(manifest, 'absent')).length > 0 ? html`<${Raw} label="absent submission paths" value=${get(manifest, 'absent')} />` : null}
    <h4>Confinement</h4>
    <${Fields}
      rows=${[
        ['level', stringOf(get(v, 'confinement', 'level'))],
        [
          'namespaces',
          listOf(get(v, 'confinement', 'namespaces'))
            .map((n) => stringOf(n) ?? '')
            .join(', '),
        ],
        ['memory', stringOf(get(v, 'confinement', 'memory'))],
        ['pids', stringOf(get(v, 'confinement', 'pids'))],
        ['wall time', stringOf(get(v, 'confinement', 'wallTime'))],
        ['network isolated', get(v, 'confinement', 'networkIsolated')],
      ]}
    />
    <${Raw} label="reap record (raw)" value=${reap} />
    <${Raw} label="reclaim record (raw)" value=${get(v, 'reclaim')} />
    <${Raw} label="custody manifest (raw)" value=${custody} />
  </section>`;
}

function ToolCall(props: { call: RunValue }): VNode {
  const fn = get(props.call, 'function');
  const name = stringOf(get(fn, 'name')) ?? '?';
  const argumentText = stringOf(get(fn, 'arguments')) ?? '';
  const parsed = parseArguments(argumentText);
  const command = stringOf(get(parsed, 'command'));
  return html`<div class="tool-call" data-testid="tool-call">
    <div class="label">
      ${'tool call '}<span class="name">${visible(name)}</span>${' '}<span class="dim"
        >${visible(stringOf(get(props.call, 'id')) ?? '')}</span
      >
    </div>
    ${command !== null ? html`<${Text} value=${command} fold=${true} />` : html`<${Text} value=${get(fn, 'arguments')} fold=${true} />`}
  </div>`;
}

function ToolResult(props: { result: RunValue }): VNode {
  const r = props.result;
  const exitCode = numberOf(get(r, 'exitCode'));
  const flags = [
    exitCode === null ? null : `exit ${exitCode}`,
    get(r, 'timedOut') === true ? 'timed out' : null,
    get(r, 'truncated') === true ? 'output truncated by the harness' : null,
    get(r, 'ok') === false ? 'refused' : null,
    duration(numberOf(get(r, 'durationMs'))),
  ].filter((f): f is string => f !== null);
  const stdout = get(r, 'stdout');
  const stderr = get(r, 'stderr');
  const error = get(r, 'error');
  return html`<div class="tool-result" data-testid="tool-result">
    <div class="label">
      result <span class="dim">${visible(stringOf(get(r, 'toolCallId')) ?? '')}</span> · ${flags.join(' · ')}
    </div>
    ${stringOf(stdout) ? html`<div class="stream"><span class="dim">stdout (${bytes(numberOf(get(r, 'stdoutBytes')))})</span><${Text} value=${stdout} fold=${true} /></div>` : null}
    ${stringOf(stderr) ? html`<div class="stream stderr"><span class="dim">stderr (${bytes(numberOf(get(r, 'stderrBytes')))})</span><${Text} value=${stderr} fold=${true} /></div>` : null}
    ${error !== null ? html`<div class="stream stderr"><${Text} value=${error} fold=${true} /></div>` : null}
  </div>`;
}

function Message(props: { message: RunValue }): VNode {
  const m = props.message;
  const role = stringOf(get(m, 'role')) ?? '?';
  const content = get(m, 'content');
  const parts = Array.isArray(content) ? content : null;
  return html`<div class=${`message role-${role.replace(/[^a-z]/g, '')}`} data-testid="message">
    <div class="label">${visible(role)}</div>
    ${
      parts !== null
        ? parts.map((p) => html`<${Text} value=${get(p, 'text') ?? p} fold=${true} />`)
        : content === null
          ? null
          : html`<${Text} value=${content} fold=${true} />`
    }
    ${listOf(get(m, 'tool_calls')).map((c) => html`<${ToolCall} call=${c} />`)}
  </div>`;
}

/** One transcript event as a person reads it; an event type the viewer does not know is shown as JSON. */
function TranscriptEvent(props: { event: RunValue }): VNode | null {
  const e = props.event;
  const type = stringOf(get(e, 'type')) ?? '?';
  const at = numberOf(get(e, 'elapsedMs'));
  const stamp = html`<span class="stamp">${at === null ? '' : `+${duration(at)}`}</span>`;
  // Each line is one JS string (a text child), so no formatting of the template can drop a space.
  const line = (cls: string, text: string, extra: VNode | null = null, testid?: string): VNode =>
    html`<div class=${`event ${cls}`} data-testid=${testid}>${stamp}${visible(text)}${extra}</div>`;
  const s = (value: RunValue): string => stringOf(value) ?? '?';
  const n = (value: RunValue): string => String(numberOf(value) ?? '–');
  switch (type) {
    case 'episode_started': {
      const limits = get(e, 'limits');
      return line(
        'meta',
        `episode started: task ${s(get(e, 'taskId'))}, agent ${s(get(e, 'agent'))}, tools ${s(get(e, 'tools'))}; limits:`,
        html`<${Fields}
          rows=${[
            ['memory', bytes(numberOf(get(limits, 'memoryBytes')))],
            ['pids', numberOf(get(limits, 'pids'))],
            ['disk', bytes(numberOf(get(limits, 'diskBytes')))],
            ['wall time', duration(numberOf(get(limits, 'wallTimeMs')))],
            ['command timeout', duration(numberOf(get(limits, 'commandTimeoutMs')))],
          ]}
        />`,
      );
    }
    case 'network_checked':
      return line(
        'meta',
        `network checked: ${get(e, 'network', 'isolated') === true ? 'isolated' : 'NOT isolated'} · ${stringOf(get(e, 'network', 'detail')) ?? ''}`,
        null,
        'network',
      );
    case 'step_started':
      return line(
        'step',
        `step ${n(get(e, 'step'))} started · submission: ${listOf(get(e, 'submission'))
          .map((x) => stringOf(x) ?? '')
          .join(', ')}`,
      );
    case 'message':
      return html`<div class="event">${stamp}<${Message} message=${get(e, 'message')} /></div>`;
    case 'tool_call':
      // The assistant message above already shows its calls with their arguments.
      return null;
    case 'tool_result':
      return html`<div class="event">${stamp}<${ToolResult} result=${get(e, 'result')} /></div>`;
    case 'model_call':
      return line(
        'meta dim',
        `turn ${n(get(e, 'turn'))} · ${stringOf(get(e, 'finishReason')) ?? ''} · model ${duration(numberOf(get(e, 'timing', 'modelMs')))}`,
      );
    case 'limit_hit':
      return line(
        'warn-box',
        `limit hit: ${s(get(e, 'hit', 'scope'))} ${s(get(e, 'hit', 'limit'))} (limit ${n(get(e, 'hit', 'limitValue'))}, observed ${n(get(e, 'hit', 'observed'))}, ${s(get(e, 'hit', 'enforcement'))}): ${stringOf(get(e, 'hit', 'message')) ?? ''}`,
        null,
        'limit-hit',
      );
    case 'reaped':
      return line(
        'meta',
        `reaped: ${get(e, 'reap', 'confirmed') === true ? 'confirmed empty' : 'NOT confirmed'} (${stringOf(get(e, 'reap', 'mechanism')) ?? ''}, ${n(get(e, 'reap', 'killed'))} killed)`,
      );
    case 'custody':
      return line(
        'meta',
        `custody: ${listOf(get(e, 'custody', 'entries')).length} entries, ${bytes(numberOf(get(e, 'custody', 'totalBytes')))}`,
      );
    case 'scored':
      return line(
        'meta',
        `scored: ${s(get(e, 'verdict', 'status'))}, score ${n(get(e, 'verdict', 'score'))}`,
      );
    case 'step_ended':
      return line(
        'step',
        `step ${n(get(e, 'step'))} ended: ${s(get(e, 'status'))} (${stringOf(get(e, 'stopReason')) ?? ''})`,
      );
    case 'episode_ended':
      return line('step', `episode ended: ${s(get(e, 'status'))}, score ${n(get(e, 'score'))}`);
    default:
      return line('other', type, html`<${Text} value=${e} fold=${true} />`);
  }
}

export function RunView(props: { id: string; source: RunSource; omittedEvents: number }): VNode {
  const { id, source } = props;
  const [detail, setDetail] = useState<RunDetail | null | undefined>(undefined);
  const [events, setEvents] = useState<RunValue[]>([]);
  const [total, setTotal] = useState(0);
  const [ended, setEnded] = useState(true);
  const [failure, setFailure] = useState<string | null>(null);

  const loadPage = async (offset: number): Promise<EventPage | null> => {
    const page = await source.events(id, offset, EVENTS_PER_PAGE);
    if (page !== null) {
      setEvents((old) => [...old.slice(0, page.offset), ...page.events]);
      setTotal(page.total);
      setEnded(page.ended);
    }
    return page;
  };

  useEffect(() => {
    let stopped = false;
    setDetail(undefined);
    setEvents([]);
    const load = async (): Promise<void> => {
      const found = await source.detail(id);
      if (stopped) return;
      setDetail(found);
      if (found !== null) await loadPage(0);
    };
    load().catch((error: unknown) => {
      setFailure(String(error));
    });
    return () => {
      stopped = true;
    };
  }, [id]);

  // A run still being written: its detail and new events are read again every two seconds.
  useEffect(() => {
    if (!source.live || ended || detail === undefined || detail === null) return;
    const timer = setInterval(() => {
      source
        .detail(id)
        .then((found) => {
          if (found !== null) setDetail(found);
          return loadPage(events.length);
        })
        .catch((error: unknown) => {
          setFailure(String(error));
        });
    }, POLL_MS);
    return () => {
      clearInterval(timer);
    };
  }, [id, ended, detail, events.length]);

  if (failure !== null) return html`<p class="problems">Could not load the run: ${visible(failure)}</p>`;
  if (detail === undefined) return html`<p>Loading the run…</p>`;
  if (detail === null) return html`<p class="problems">No such run.</p>`;
  const s = detail.summary;
  const result = detail.result;
  const steps = listOf(get(result, 'steps'));
  const episodeError = get(result, 'error');
  return html`<article class="run" data-testid="run">
    <p><a href="#" class="back">← all runs</a></p>
    <h2>${visible(s.name)} <span class=${`badge ${s.status}`} data-testid="run-status">${s.status}</span></h2>
    <${Fields}
      rows=${[
        ['task', s.taskId],
        ['agent', s.agent],
        ['score', s.score],
        ['misbehavior', s.misbehavior.join(', ')],
        ['reason', s.reason],
        ['turns', s.turns],
        ['duration', duration(s.durationMs)],
        ['started', s.startedAt],
        ['sandbox uid', numberOf(get(result, 'sandbox', 'uid'))],
        ['wall time exceeded', get(result, 'wallTimeExceeded')],
        ['directory', `${s.root}/${s.name}`],
        ...(s.attack === null
          ? []
          : ([
              ['attack class', s.attack.class],
              ['expected', expectedText(s)],
              ['outcome', outcomeText(s)],
            ] as [string, RunValue][])),
      ]}
    />
    ${
      s.problems.length > 0
        ? html`<div class="problems" data-testid="problems">
            <h3>Problems reading this run</h3>
            <ul>
              ${s.problems.map((p) => html`<li>${visible(p)}</li>`)}
            </ul>
          </div>`
        : null
    }
    ${
      episodeError === null
        ? null
        : html`<div class="failure">
            <h3>Error</h3>
            <${Text} value=${episodeError} />
          </div>`
    }
    <h3>Misbehavior</h3>
    <${MisbehaviorList} items=${listOf(get(result, 'misbehavior'))} />
    <h3>Transcript</h3>
    <p class="dim" data-testid="event-count">
      ${`${events.length} of ${total} events${ended ? '' : ' (the run is still being written)'}${props.omittedEvents > 0 ? ` · ${props.omittedEvents} more events were left out of this file` : ''}`}
    </p>
    <div class="transcript" data-testid="transcript">
      ${events.map((e) => html`<${TranscriptEvent} event=${e} />`)}
    </div>
    ${
      events.length < total
        ? html`<button type="button" class="more" onClick=${() => void loadPage(events.length)}>
            show ${Math.min(EVENTS_PER_PAGE, total - events.length)} more events
          </button>`
        : null
    }
    <h2>Evidence</h2>
    <h3>Network proof</h3>
    <${Fields}
      rows=${[
        ['checked', get(result, 'network', 'checked')],
        ['isolated', get(result, 'network', 'isolated')],
        ['detail', stringOf(get(result, 'network', 'detail'))],
      ]}
    />
    ${steps.map((step, i) => html`<${Verdict} verdict=${get(step, 'verdict')} index=${numberOf(get(step, 'index')) ?? i} />`)}
    <${Raw} label="result.json (raw)" value=${result} />
  </article>`;
}

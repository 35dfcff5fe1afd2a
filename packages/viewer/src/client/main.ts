// The page: the runs table, or one run (`#run=<id>`). Mounted into #app by Preact, which only
// ever creates text nodes for strings: nothing a run holds is parsed as HTML.

import { html } from 'htm/preact';
import { render, type VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { RunList } from '../runs/model.js';
import { RunView } from './run-view.js';
import { RunsView } from './runs-view.js';
import { createSource } from './source.js';
import { visible } from './text.js';

const { source, omittedEvents } = createSource();
const LIST_POLL_MS = 5000;

function currentRun(): string | null {
  const match = /^#run=([0-9a-f]{16})$/.exec(window.location.hash);
  return match === null ? null : match[1]!;
}

function App(): VNode {
  const [list, setList] = useState<RunList | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [run, setRun] = useState(currentRun());

  useEffect(() => {
    const onHash = (): void => {
      setRun(currentRun());
      window.scrollTo(0, 0);
    };
    window.addEventListener('hashchange', onHash);
    return () => {
      window.removeEventListener('hashchange', onHash);
    };
  }, []);

  useEffect(() => {
    const load = (): void => {
      source
        .list()
        .then((found) => {
          setList(found);
          setFailure(null);
        })
        .catch((error: unknown) => {
          setFailure(String(error));
        });
    };
    load();
    // Served: runs written since (a red-team still going) appear without a reload.
    if (!source.live) return;
    const timer = setInterval(load, LIST_POLL_MS);
    return () => {
      clearInterval(timer);
    };
  }, []);

  return html`<div class="page">
    <header>
      <h1><a href="#">Karotte runs</a></h1>
      ${list === null ? null : html`<p class="roots">${list.roots.map((r) => html`<code>${visible(r)}</code> `)}</p>`}
    </header>
    ${failure === null ? null : html`<p class="problems">${visible(failure)}</p>`}
    ${
      run !== null
        ? html`<${RunView} id=${run} source=${source} omittedEvents=${omittedEvents(run)} />`
        : list === null
          ? html`<p>Loading runs…</p>`
          : html`<${RunsView} list=${list} onOpen=${(id: string) => (window.location.hash = `run=${id}`)} />`
    }
  </div>`;
}

const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(html`<${App} />`, root);
}

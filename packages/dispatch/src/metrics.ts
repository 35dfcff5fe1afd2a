import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly values: Map<string, number>;
}

/** Histogram buckets of episode phases, in seconds. */
const BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

function key(labels: Labels): string {
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1));
  return entries
    .map(([k, v]) => `${k}="${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`)
    .join(',');
}

/** A small Prometheus text registry: counters, gauges and one histogram kind, no dependency. */
export class Metrics {
  private readonly series = new Map<string, Series>();
  private readonly histograms = new Map<
    string,
    Map<string, { labels: Labels; buckets: number[]; sum: number; count: number }>
  >();

  private get(name: string, help: string, type: Series['type']): Series {
    let s = this.series.get(name);
    if (s === undefined) {
      s = { help, type, values: new Map() };
      this.series.set(name, s);
    }
    return s;
  }

  /** Declare a series so it is exported (at 0) before its first event. */
  declare(name: string, help: string, type: 'counter' | 'gauge', labels: Labels = {}): void {
    const s = this.get(name, help, type);
    if (!s.values.has(key(labels))) s.values.set(key(labels), 0);
  }

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const s = this.get(name, help, 'counter');
    const k = key(labels);
    s.values.set(k, (s.values.get(k) ?? 0) + by);
  }

  set(name: string, help: string, value: number, labels: Labels = {}): void {
    this.get(name, help, 'gauge').values.set(key(labels), value);
  }

  observe(name: string, help: string, seconds: number, labels: Labels = {}): void {
    this.get(name, help, 'histogram');
    let byLabels = this.histograms.get(name);
    if (byLabels === undefined) {
      byLabels = new Map();
      this.histograms.set(name, byLabels);
    }
    const k = key(labels);
    let h = byLabels.get(k);
    if (h === undefined) {
      h = { labels, buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
      byLabels.set(k, h);
    }
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) h.buckets[i] = (h.buckets[i] ?? 0) + 1;
    });
    h.sum += seconds;
    h.count += 1;
  }

  /** The value of a counter or gauge (tests and the health answers read it). */
  value(name: string, labels: Labels = {}): number {
    return this.series.get(name)?.values.get(key(labels)) ?? 0;
  }

  /** The Prometheus text exposition (version 0.0.4). */
  render(): string {
    const out: string[] = [];
    for (const [name, s] of [...this.series.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      out.push(`# HELP ${name} ${s.help}`, `# TYPE ${name} ${s.type}`);
      if (s.type !== 'histogram') {
        for (const [k, v] of s.values) out.push(`${name}${k === '' ? '' : `{${k}}`} ${v}`);
        continue;
      }
      for (const h of this.histograms.get(name)?.values() ?? []) {
        const base = key(h.labels);
        BUCKETS.forEach((le, i) => {
          out.push(`${name}_bucket{${key({ ...h.labels, le: String(le) })}} ${h.buckets[i] ?? 0}`);
        });
        out.push(`${name}_bucket{${key({ ...h.labels, le: '+Inf' })}} ${h.count}`);
        out.push(`${name}_sum${base === '' ? '' : `{${base}}`} ${h.sum}`);
        out.push(`${name}_count${base === '' ? '' : `{${base}}`} ${h.count}`);
      }
    }
    return `${out.join('\n')}\n`;
  }
}

/** What the health server asks its worker. */
export interface HealthSource {
  /** Alive: the event loop answers (always true while it can answer at all). */
  healthy(): boolean;
  /** Ready for jobs: leftovers reclaimed, Redis connected, not draining. */
  ready(): boolean;
  metrics(): string;
}

/** The `/healthz`, `/readyz` and `/metrics` server of a worker. */
export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serve `/healthz`, `/readyz` and `/metrics` on `host:port` (port 0: any free port). */
export async function serveHealth(source: HealthSource, port: number, host: string): Promise<HealthServer> {
  const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/healthz' || url === '/readyz') {
      const ok = url === '/healthz' ? source.healthy() : source.ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not ready\n');
      return;
    }
    if (url === '/metrics') {
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(source.metrics());
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

// The Kubernetes manifests of deploy/k8s, read as Kubernetes reads them (YAML), checked against
// the real flags of `karotte worker`: every argument a worker container passes must parse with
// the command's own flag table, with the values its checks accept, and the privileges, probes,
// secrets and KEDA key must agree with those flags.
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseFlags } from './args.js';
import { integerFlag, queueFlags, WORKER_FLAGS } from './commands/worker.js';

const K8S = path.resolve(import.meta.dirname, '../../../deploy/k8s');

type Doc = Record<string, unknown>;
const get = (value: unknown, ...keys: (string | number)[]): unknown =>
  keys.reduce<unknown>(
    (v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined),
    value,
  );

function documents(): { file: string; doc: Doc }[] {
  const out: { file: string; doc: Doc }[] = [];
  for (const file of fs
    .readdirSync(K8S)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    for (const parsed of parseAllDocuments(fs.readFileSync(path.join(K8S, file), 'utf8'))) {
      expect(parsed.errors, file).toEqual([]);
      out.push({ file, doc: parsed.toJS() as Doc });
    }
  }
  return out;
}

/** `$(VAR)` as the kubelet expands it, from the container's env (a placeholder for secrets). */
function expand(arg: string, env: readonly Doc[]): string {
  return arg.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => {
    const entry = env.find((e) => e['name'] === name);
    expect(entry, `$(${name}) has an env entry`).toBeDefined();
    if (name === 'KAROTTE_REDIS_URL') return 'redis://karotte-redis.karotte.svc:6379';
    return typeof entry!['value'] === 'string' ? entry!['value'] : 'karotte-worker-0';
  });
}

function workerContainers(): { file: string; doc: Doc; pod: Doc; container: Doc }[] {
  const out: { file: string; doc: Doc; pod: Doc; container: Doc }[] = [];
  for (const { file, doc } of documents()) {
    const pod = get(doc, 'spec', 'template', 'spec') as Doc | undefined;
    for (const container of (get(pod, 'containers') as Doc[] | undefined) ?? [])
      if ((container['args'] as string[] | undefined)?.[0] === 'worker')
        out.push({ file, doc, pod: pod!, container });
  }
  return out;
}

describe('deploy/k8s', () => {
  const docs = documents();
  const workers = workerContainers();

  it('has the namespace with the privileged pod-security label, a Deployment and a Job of workers', () => {
    const ns = docs.find((d) => d.doc['kind'] === 'Namespace');
    expect(get(ns?.doc, 'metadata', 'labels', 'pod-security.kubernetes.io/enforce')).toBe('privileged');
    expect(workers.map((w) => w.doc['kind']).sort()).toEqual(['Deployment', 'Job']);
    for (const d of docs)
      if (d.doc['kind'] !== 'Namespace' && d.doc['kind'] !== 'Kustomization')
        expect(get(d.doc, 'metadata', 'namespace'), d.file).toBe('karotte');
    const kustomization = docs.find((d) => d.doc['kind'] === 'Kustomization');
    for (const file of kustomization!.doc['resources'] as string[])
      expect(fs.existsSync(path.join(K8S, file)), file).toBe(true);
  });

  it.each(workerContainers().map((w) => [`${w.file} ${w.doc['kind'] as string}`, w]))(
    '%s: its arguments parse with the flags of karotte worker, and the pod fits them',
    (_name, { pod, container }) => {
      const env = (container['env'] as Doc[] | undefined) ?? [];
      const args = (container['args'] as string[]).slice(1).map((a) => expand(a, env));
      const flags = parseFlags(args, WORKER_FLAGS, ['tasks']);
      expect(flags.redis).toMatch(/^redis:\/\/[^:@/]+:\d+$/);
      expect(
        flags.concurrency === 'auto' || integerFlag('concurrency', flags.concurrency, 1, 1024) !== undefined,
      ).toBe(true);
      expect(() => queueFlags(flags)).not.toThrow();
      const drainMs = integerFlag('drain-timeout-ms', flags['drain-timeout-ms'], 0, 86_400_000) ?? 600_000;
      const port = integerFlag('metrics-port', flags['metrics-port'], 0, 65_535);
      if (flags['idle-ms'] !== undefined) expect(flags['exit-when-drained']).toBe(true);
      // The password never on the command line: from the Secret, in the environment.
      expect(args.join(' ')).not.toMatch(/password|change-me/i);
      const password = env.find((e) => e['name'] === 'KAROTTE_REDIS_PASSWORD');
      expect(get(password, 'valueFrom', 'secretKeyRef', 'name')).toBe('karotte-redis');
      // Privileged (the sandbox needs it), no host namespaces, no API token.
      expect(get(container, 'securityContext', 'privileged')).toBe(true);
      for (const key of ['hostNetwork', 'hostPID', 'hostIPC']) expect(pod[key] ?? false).toBe(false);
      expect(pod['automountServiceAccountToken']).toBe(false);
      // The grace period covers the drain; the probes ask the worker's own port.
      expect(Number(pod['terminationGracePeriodSeconds'])).toBeGreaterThanOrEqual(drainMs / 1000 + 30);
      expect(get(container, 'readinessProbe', 'httpGet', 'path')).toBe('/readyz');
      expect(get(container, 'readinessProbe', 'httpGet', 'port')).toBe(port);
      const mounts = ((container['volumeMounts'] as Doc[] | undefined) ?? []).map((m) => m['mountPath']);
      expect(mounts).toEqual(expect.arrayContaining(['/var/lib/karotte', '/run/karotte', '/tmp']));
    },
  );

  it("KEDA counts the worker queue's own wait list", () => {
    const scaled = docs.find((d) => d.doc['kind'] === 'ScaledObject')!;
    const deployment = workers.find((w) => w.doc['kind'] === 'Deployment')!;
    expect(get(scaled.doc, 'spec', 'scaleTargetRef', 'name')).toBe(get(deployment.doc, 'metadata', 'name'));
    const args = (deployment.container['args'] as string[]).slice(1);
    const flags = parseFlags(
      args.map((a) => (a.startsWith('$(') ? 'redis://x:1' : a)),
      WORKER_FLAGS,
      ['tasks'],
    );
    const { queue = 'episodes', prefix = '{karotte}' } = queueFlags(flags);
    expect(get(scaled.doc, 'spec', 'triggers', 0, 'metadata', 'listName')).toBe(`${prefix}:${queue}:wait`);
  });

  it('the dev Redis runs with AOF and noeviction, its password from the Secret', () => {
    const redis = docs.find((d) => d.file === 'redis-dev.yaml' && d.doc['kind'] === 'Deployment')!;
    const args = get(redis.doc, 'spec', 'template', 'spec', 'containers', 0, 'args') as string[];
    expect(args.join(' ')).toContain('--maxmemory-policy noeviction');
    expect(args.join(' ')).toContain('--appendonly yes');
    expect(args).toContain('$(REDIS_PASSWORD)');
  });
});

// A small Debian image built on this machine, without a container engine: mmdebstrap (Debian's
// own tool; it uses the machine's apt sources) writes a root file system tarball, and the
// package's layout writer makes it an OCI image layout that `environment.image` can name.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseOptions, readJsonFile, resolveTrustedBinary, TrustedBinaryError } from '@karotte/base';
import { z } from 'zod';
import { ImageError } from './errors.js';
import { writeOciLayout } from './layout-writer.js';

export const buildDebianImageOptionsSchema = z.strictObject({
  /** The OCI layout directory to write; it must not exist yet. */
  out: z.string().min(1),
  /** Debian packages beyond the essential ones (`python3`, `python3-numpy`). @default [] */
  packages: z
    .array(z.string().regex(/^[a-z0-9][a-z0-9+.-]+$/u, 'must be a Debian package name'))
    .max(200)
    .default([]),
  /** The Debian suite. @default 'bookworm' */
  suite: z
    .string()
    .regex(/^[a-z][a-z-]*$/u)
    .default('bookworm'),
  /** Bound on mmdebstrap. @default 1800000 (30 minutes) */
  timeoutMs: z
    .number()
    .int()
    .positive()
    .default(30 * 60_000),
  abortSignal: z.instanceof(AbortSignal).optional(),
});
export type BuildDebianImageOptions = z.input<typeof buildDebianImageOptionsSchema>;

/** The tag a build of `suite` with `packages` carries: what makes a later build of it a no-op. */
export function debianImageTag(suite: string, packages: readonly string[]): string {
  return `${suite}${packages.length === 0 ? '' : `-${packages.join('-')}`}`.slice(0, 128);
}

/** The part of an OCI index a finished build is recognised by (other fields are kept as they are). */
const builtIndexSchema = z.looseObject({
  manifests: z
    .array(
      z.looseObject({
        digest: z.string().regex(/^sha256:[0-9a-f]{64}$/u),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
    )
    .length(1),
});

/** The digest of the layout at `out` when it is a build tagged `tag`; refused otherwise. */
async function existingBuild(out: string, tag: string): Promise<string> {
  const index = await readJsonFile(path.join(out, 'index.json'), {
    maxBytes: 1024 * 1024,
    schema: builtIndexSchema,
  }).catch(() => undefined);
  const manifest = index?.ok === true ? index.value.manifests[0] : undefined;
  if (manifest?.annotations?.['org.opencontainers.image.ref.name'] === tag) return manifest.digest;
  throw new ImageError(
    'IMAGE_INVALID',
    `${out} exists already and is not a build of ${tag}: remove it or name another directory`,
  );
}

/** Where a build's stderr is cut for the error message. */
const STDERR_KEEP = 4000;

/**
 * Build a Debian image (`essential` variant plus `packages`, without man pages, docs and
 * locales) as an OCI image layout at `out`. Returns its digest. Needs root and mmdebstrap.
 * When `out` already holds a build of the same suite and packages, nothing is built and its
 * digest is returned.
 * @throws ImageError `IMAGE_CACHE_FAILED` (no mmdebstrap, not root, the build failed),
 *   `IMAGE_INVALID` (something else exists at `out`).
 */
export async function buildDebianImage(options: BuildDebianImageOptions): Promise<string> {
  const opts = parseOptions(buildDebianImageOptionsSchema, options, 'buildDebianImage options');
  if (process.getuid?.() !== 0)
    throw new ImageError('IMAGE_CACHE_FAILED', 'building a Debian image needs root');
  let mmdebstrap: string;
  try {
    mmdebstrap = resolveTrustedBinary('mmdebstrap');
  } catch (error) {
    if (!TrustedBinaryError.isInstance(error)) throw error;
    throw new ImageError('IMAGE_CACHE_FAILED', 'mmdebstrap is not installed (apt-get install mmdebstrap)', {
      cause: error,
    });
  }
  const out = path.resolve(opts.out);
  const tag = debianImageTag(opts.suite, opts.packages);
  // Building what is already there is nothing to do: a layout this function wrote for the same
  // suite and packages (its tag says so) is answered with its digest. Anything else at `out` is
  // never overwritten.
  if (statSync(out, { throwIfNoEntry: false }) !== undefined) return existingBuild(out, tag);
  mkdirSync(path.dirname(out), { recursive: true });
  const work = mkdtempSync(path.join(path.dirname(out), `.karotte-build-${path.basename(out)}-`));
  try {
    const tarball = path.join(work, 'rootfs.tar');
    const args = [
      '--variant=essential',
      ...(opts.packages.length === 0 ? [] : [`--include=${opts.packages.join(',')}`]),
      '--dpkgopt=path-exclude=/usr/share/man/*',
      '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--format=tar',
      '--quiet',
      opts.suite,
      tarball,
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(mmdebstrap, args, {
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: opts.timeoutMs,
        killSignal: 'SIGKILL',
        ...(opts.abortSignal === undefined ? {} : { signal: opts.abortSignal }),
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
      });
      child.on('error', (error) => {
        reject(
          new ImageError('IMAGE_CACHE_FAILED', `cannot run mmdebstrap: ${error.message}`, { cause: error }),
        );
      });
      child.on('exit', (code, signal) => {
        if (code === 0) resolve();
        else
          reject(
            new ImageError(
              'IMAGE_CACHE_FAILED',
              `mmdebstrap failed (${String(code ?? signal)}): ${stderr.trim()}`,
            ),
          );
      });
    });
    const layout = path.join(work, 'layout');
    const digest = await writeOciLayout({
      dir: layout,
      layers: [tarball],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8'],
      workingDir: '/',
      tag,
    });
    rmSync(tarball);
    try {
      renameSync(layout, out);
    } catch (error) {
      // Another build of the same image finished first (two tests, two shells): use it.
      if (statSync(out, { throwIfNoEntry: false }) === undefined) throw error;
      return await existingBuild(out, tag);
    }
    return digest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

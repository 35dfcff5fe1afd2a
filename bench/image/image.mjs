// Task images, side by side with their named baselines. Run as root after
// `pnpm --filter @karotte/sandbox build` and with the test image built (any image test builds
// /var/cache/karotte/test-images/python, or `karotte image build-debian` one and set
// KAROTTE_BENCH_IMAGE to it):  node bench/image/image.mjs
//   (a) an episode's start in a cached image (create + first command + teardown) vs the same
//       on the host view, alternating, KAROTTE_BENCH_RUNS (default 7) each;
//   (b) the first import of the image (digest checks, safe unpack, into a fresh cache) vs
//       `tar -x` of its layer blobs into a fresh directory, alternating, 5 each.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const { createSandbox } = await import(new URL('../../packages/sandbox/dist/index.js', import.meta.url).href);
const { importImage } = await import(new URL('../../packages/sandbox/dist/image.js', import.meta.url).href);

const MiB = 1024 * 1024;
const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 128, nofile: 512 };
const runs = Number(process.env.KAROTTE_BENCH_RUNS ?? 7);
const image = process.env.KAROTTE_BENCH_IMAGE ?? '/var/cache/karotte/test-images/python';
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const row = (name, ms, baselineName, baselineMs) =>
  console.log(
    `${name.padEnd(44)} ${ms.toFixed(1).padStart(8)} ms   ${baselineName.padEnd(24)} ${baselineMs.toFixed(1).padStart(8)} ms   ratio ${(ms / baselineMs).toFixed(2)}x`,
  );

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-image-'));
try {
  console.log(`${image}  load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cpus`);
  const { rootfs } = await importImage(image, { cacheDir: path.join(work, 'cache') });

  const episode = async (options) => {
    const started = performance.now();
    const box = await createSandbox({ limits: LIMITS, ...options });
    try {
      const result = await box.exec('echo hi');
      if (result.stdout !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(result.stdout)}`);
    } finally {
      await box.destroy();
    }
    return performance.now() - started;
  };
  await episode({});
  await episode({ rootfs });
  const inImage = [];
  const onHost = [];
  for (let i = 0; i < runs; i += 1) {
    onHost.push(await episode({}));
    inImage.push(await episode({ rootfs }));
  }
  row('(a) episode start in the cached image', median(inImage), 'on the host view', median(onHost));

  const blobs = path.join(image, 'blobs', 'sha256');
  const layers = fs
    .readdirSync(blobs)
    .map((hex) => path.join(blobs, hex))
    .filter((file) => fs.statSync(file).size > 1 * MiB);
  const bytes = layers.reduce((sum, file) => sum + fs.statSync(file).size, 0);
  const imports = [];
  const tars = [];
  for (let i = 0; i < 5; i += 1) {
    const into = path.join(work, `tar-${i}`);
    fs.mkdirSync(into);
    let started = performance.now();
    for (const layer of layers) {
      const tar = spawnSync('/usr/bin/tar', ['-C', into, '-xf', layer], { stdio: 'ignore' });
      if (tar.status !== 0) throw new Error(`tar -x failed: ${tar.status}`);
    }
    tars.push(performance.now() - started);
    fs.rmSync(into, { recursive: true, force: true });
    const cache = path.join(work, `cache-${i}`);
    started = performance.now();
    await importImage(image, { cacheDir: cache });
    imports.push(performance.now() - started);
    fs.rmSync(cache, { recursive: true, force: true });
  }
  row(
    `(b) first import (${(bytes / MiB).toFixed(0)} MiB of layers)`,
    median(imports),
    'tar -x of the layers',
    median(tars),
  );
  console.log(`load average at the end ${os.loadavg()[0].toFixed(1)}`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

// An episode whose grader interpreter is untrusted is refused before its sandbox exists
// (root, real files): a copy of this Node.js in /tmp, a root-owned link into a directory a
// user owns, a copy in a hidden directory. Status error UNTRUSTED_INTERPRETER, nothing run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutableJudge } from '@karotte/grader';
import { testUid } from '../../../test/support/index.js';
import { createReplayAgent } from './agent.js';
import { checkHost } from './check.js';
import { runEpisode, type EpisodeProgress, type WorldFactory } from './episode.js';
import { loadTask } from './task.js';

const examples = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');
const made: string[] = [];
let rootOwned: string;

beforeAll(() => {
  fs.mkdirSync('/var/lib/karotte', { recursive: true, mode: 0o755 });
  rootOwned = fs.mkdtempSync('/var/lib/karotte/karotte-test-episode-interp-');
  fs.chmodSync(rootOwned, 0o755);
  made.push(rootOwned);
});
afterAll(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function copyNode(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  fs.copyFileSync(process.execPath, file);
  fs.chmodSync(file, 0o755);
  return file;
}

const interpreters: Record<string, () => string> = {
  'a copy of Node.js in a mkdtemp directory under /tmp': () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-episode-node-'));
    made.push(dir);
    return copyNode(path.join(dir, 'node'));
  },
  'a root-owned link into a directory a user owns': () => {
    const userDir = path.join(rootOwned, 'user');
    const target = copyNode(path.join(userDir, 'node'));
    fs.chownSync(userDir, testUid(), testUid());
    const link = path.join(rootOwned, 'venv', 'bin', 'node');
    fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o755 });
    fs.symlinkSync(target, link);
    return link;
  },
  'a copy in a hidden directory (~/.nvm)': () =>
    copyNode(path.join(rootOwned, 'home', '.nvm', 'versions', 'node', 'bin', 'node')),
};

describe('an untrusted grader interpreter refuses the episode up front', () => {
  it.each(Object.keys(interpreters))('%s: error UNTRUSTED_INTERPRETER, no sandbox built', async (label) => {
    const interpreter = interpreters[label]!();
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-episode-out-'));
    made.push(out);
    let worlds = 0;
    const createWorld: WorldFactory = () => {
      worlds += 1;
      return Promise.reject(new Error('the sandbox must not be built'));
    };
    const events: EpisodeProgress['type'][] = [];
    const control = JSON.parse(
      fs.readFileSync(path.join(examples, 'quarterly-revenue', 'control.json'), 'utf8'),
    ) as Parameters<typeof createReplayAgent>[0];
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: out,
      createWorld,
      judgeFor: (step) => createExecutableJudge({ program: step.graderScript!, interpreter }),
      onProgress: (event) => events.push(event.type),
    });
    expect(worlds).toBe(0);
    expect(events).toEqual([]);
    expect(result).toMatchObject({
      status: 'error',
      score: 0,
      turns: 0,
      sandbox: { uid: null },
      error: { code: 'UNTRUSTED_INTERPRETER' },
    });
    expect(result.error!.message).toContain(interpreter);
    const saved = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as typeof result;
    expect(saved.error).toEqual(result.error);
    const types = fs
      .readFileSync(path.join(out, 'transcript.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types).toEqual(['episode_started', 'error', 'episode_ended']);
  });

  it("checkHost reports this harness's own Node.js as a trusted grader interpreter", async () => {
    const report = await checkHost();
    const row = report.defenses.find((defense) => defense.name === 'grader_interpreter');
    expect(row).toMatchObject({ contract: 'prevented' });
    expect(row!.reason).toContain(process.execPath);
    expect(report.defenses.at(-1)!.name).toBe('rootless_tier');
  });
});

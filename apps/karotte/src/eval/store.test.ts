import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { episodeDir, readEpisode, readUsage, reconcileSettings, type EvalSettings } from './store.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-eval-store-'));
  made.push(dir);
  return dir;
}

const line = (event: Record<string, unknown>): string => `${JSON.stringify(event)}\n`;

describe('the eval store', () => {
  it('names episode directories <task>/<NNN> from 000', () => {
    expect(episodeDir('/out', 'roman-numerals', 0)).toBe('/out/roman-numerals/000');
    expect(episodeDir('/out', 'roman-numerals', 42)).toBe('/out/roman-numerals/042');
  });

  it("sums the usage of a transcript's model calls, and nothing else (not a tool result that quotes one)", async () => {
    const file = path.join(tmp(), 'transcript.jsonl');
    const quoted = JSON.stringify({ type: 'model_call', usage: { inputTokens: 999999, outputTokens: 1 } });
    fs.writeFileSync(
      file,
      line({ seq: 0, type: 'episode_started' }) +
        line({
          seq: 1,
          type: 'model_call',
          usage: { inputTokens: 100, outputTokens: 10, cachedInputTokens: 40 },
        }) +
        line({ seq: 2, type: 'tool_result', result: { stdout: quoted } }) +
        line({ seq: 3, type: 'model_call', usage: null }) +
        line({ seq: 4, type: 'model_call', usage: { inputTokens: 7, outputTokens: 3, reasoningTokens: 2 } }) +
        '{"seq": 5, "type":"model_call", "usage": {"inputTokens": 1,', // a line cut short by a kill
    );
    expect(await readUsage(file)).toEqual({
      inputTokens: 107,
      outputTokens: 13,
      cachedInputTokens: 40,
      reasoningTokens: 2,
      calls: 3,
    });
    expect(await readUsage(path.join(tmp(), 'none.jsonl'))).toMatchObject({ inputTokens: 0, calls: 0 });
  });

  it('reads a whole result as done, a directory without one (or with a torn one) as partial, no directory as missing', async () => {
    const out = tmp();
    const done = episodeDir(out, 't', 0);
    fs.mkdirSync(done, { recursive: true });
    fs.writeFileSync(
      path.join(done, 'result.json'),
      JSON.stringify({
        taskId: 't',
        status: 'failed',
        score: 0,
        misbehavior: [
          { code: 'SYMLINK', message: 'x' },
          { code: 'SYMLINK', message: 'y' },
        ],
        sandbox: { uid: 1 },
        durationMs: 1234,
        turns: 4,
        error: null,
      }),
    );
    fs.writeFileSync(
      path.join(done, 'transcript.jsonl'),
      line({ type: 'model_call', usage: { inputTokens: 5, outputTokens: 1 } }),
    );
    expect(await readEpisode(done, 't')).toEqual({
      kind: 'done',
      record: {
        status: 'failed',
        score: 0,
        misbehavior: ['SYMLINK', 'SYMLINK'],
        errorCode: null,
        durationMs: 1234,
        turns: 4,
        usage: { inputTokens: 5, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0, calls: 1 },
      },
    });
    expect(await readEpisode(done, 'other')).toMatchObject({ kind: 'partial' });
    const partial = episodeDir(out, 't', 1);
    fs.mkdirSync(partial, { recursive: true });
    fs.writeFileSync(path.join(partial, 'transcript.jsonl'), line({ type: 'episode_started' }));
    expect(await readEpisode(partial, 't')).toEqual({ kind: 'partial', reason: 'no result.json' });
    fs.writeFileSync(path.join(partial, 'result.json'), '{"taskId": "t", "status": "pass');
    expect(await readEpisode(partial, 't')).toMatchObject({ kind: 'partial' });
    expect(await readEpisode(episodeDir(out, 't', 2), 't')).toEqual({ kind: 'missing' });
  });

  it('records the settings once, then accepts the same (another base URL too) and refuses others naming the flag', async () => {
    const out = tmp();
    const settings: EvalSettings = {
      agent: 'openai',
      model: 'qwen',
      baseUrl: 'http://127.0.0.1:8000/v1',
      tools: 'bash',
      maxTurns: null,
      replay: null,
    };
    expect(await reconcileSettings(out, settings)).toBeNull();
    expect(fs.existsSync(path.join(out, 'eval.json'))).toBe(true);
    expect(await reconcileSettings(out, { ...settings, baseUrl: 'http://127.0.0.1:9000/v1' })).toBeNull();
    expect(await reconcileSettings(out, { ...settings, model: 'llama' })).toMatch(/^--model: /);
    expect(await reconcileSettings(out, { ...settings, tools: 'openai' })).toMatch(/^--tools: /);
    expect(await reconcileSettings(out, { ...settings, maxTurns: 5 })).toMatch(/^--max-turns: /);
    fs.writeFileSync(path.join(out, 'eval.json'), 'not json');
    expect(await reconcileSettings(out, settings)).toMatch(/^--out: /);
  });
});

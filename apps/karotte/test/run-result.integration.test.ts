// `karotte run` writes result.json whatever fails once its arguments are valid: here the
// reclaim of earlier harnesses' leftovers fails for real. The CLI cannot be pointed at another
// state directory, so the run happens in a private mount namespace (unshare) where
// /run/karotte is a fresh tmpfs holding one unsafe entry: a group-record directory anyone may
// write, which @karotte/limits' recovery refuses (UNSAFE_STATE_DIR: its records could be forged).
// The host's own /run/karotte, and every other harness using it, never see the change.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
const example = path.join(app, 'examples', 'quarterly-revenue');
const made: string[] = [];

afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs argv with a private mount namespace in which /run/karotte is an empty tmpfs holding
 * `groups/` at mode 0777. The mounts die with the namespace, when the command exits.
 */
const UNSAFE_STATE = [
  'mount -t tmpfs -o mode=0755,size=1m karotte-test-state /run/karotte',
  'mkdir -m 0777 /run/karotte/groups',
  'exec "$@"',
].join(' && ');

describe('karotte run always writes result.json', () => {
  it('when reclaiming leftovers of earlier runs fails: exit 1, status error, and the reason', () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-cli-recovery-'));
    made.push(out);
    const run = spawnSync(
      '/usr/bin/unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        UNSAFE_STATE,
        'karotte-test-unsafe-state',
        process.execPath,
        cli,
        'run',
        '--task',
        example,
        '--agent',
        'replay',
        '--replay',
        path.join(example, 'control.json'),
        '--out',
        out,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(run.error).toBeUndefined();
    expect(run.status, run.stderr).toBe(1);
    const resultFile = path.join(out, 'result.json');
    expect(fs.existsSync(resultFile), `no result.json; stderr: ${run.stderr}`).toBe(true);
    const result = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as Record<string, unknown>;
    expect(result).toMatchObject({
      taskId: 'quarterly-revenue',
      status: 'error',
      score: 0,
      misbehavior: [],
      sandbox: { uid: null },
      error: { code: 'CONFINEMENT_UNAVAILABLE' },
    });
    const message = (result['error'] as { message: string }).message;
    expect(message).toContain('leftovers of earlier runs');
    expect(message).toContain('UNSAFE_STATE_DIR');
    expect(message).toContain('/run/karotte/groups is writable by group or others');
    // The summary line says so too, and the transcript holds the fault.
    expect(run.stdout).toContain('quarterly-revenue: error score=0');
    const transcript = fs.readFileSync(path.join(out, 'transcript.jsonl'), 'utf8');
    expect(transcript).toContain('"type":"error"');
    // The host's state directory was never touched.
    expect(
      fs.existsSync('/run/karotte/groups') && (fs.statSync('/run/karotte/groups').mode & 0o022) !== 0,
    ).toBe(false);
  });
});

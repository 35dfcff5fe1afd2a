// The persistent shell's protocol (commands in, `E <status>` and `M <nonce>` out) as an
// adversary sees it from inside a real sandbox: a command that tries every descriptor 0..1023
// to announce its own end, read the nonce, and steal the next command must fool nothing.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';

let box: Sandbox;

/** The command line of a live pid, or '' when it is gone. */
function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

beforeAll(async () => {
  box = await createSandbox({
    limits: { diskBytes: 16 * MiB, memoryBytes: 192 * MiB, pids: 64 },
    commandTimeoutMs: 60_000,
  });
}, 120_000);

afterAll(async () => {
  const uid = box?.uid;
  await box?.destroy();
  if (uid !== undefined) expect(pidsOfUid(uid)).toEqual([]);
});

/**
 * The forger, as the student runs it. It announces an end (`E 0`) on every open descriptor
 * and on every descriptor of every process it can reopen through /proc,
 * waits for a nonce on any of them, prints it as the end-of-output tokens and answers `M
 * <nonce>` everywhere; then it reads the next command off the descriptor the nonce came from
 * (so that command never runs) and forges its end too. Last, it ends with status 5 and says
 * what it managed.
 */
const FORGER = String.raw`
open=''
for fd in {0..1023}; do { : >&"$fd"; } 2>/dev/null && open="$open $fd"; done
printf 'open descriptors:%s\n' "$open"
forged=0
cmdfd=''
forge() {
  local fd f line
  for fd in $open; do { printf 'E 0\n' >&"$fd"; } 2>/dev/null; done
  # Also every descriptor of every process it can see, reopened through /proc.
  for f in /proc/[0-9]*/fd/*; do { printf 'E 0\n' >"$f"; } 2>/dev/null; done
  for fd in $open; do
    if { read -r -t 1 -u "$fd" line; } 2>/dev/null && [[ $line =~ ^[0-9a-f]{32}$ ]]; then
      printf '%s' "$line"
      printf '%s' "$line" >&2
      for f in $open; do { printf 'M %s\n' "$line" >&"$f"; } 2>/dev/null; done
      for f in /proc/[0-9]*/fd/*; do { printf 'M %s\n' "$line" >"$f"; } 2>/dev/null; done
      cmdfd=$fd
      return 0
    fi
  done
  return 1
}
if forge; then
  forged=1
  if { read -r -d '' -t 20 -u "$cmdfd" stolen; } 2>/dev/null; then
    forge && forged=2
  fi
fi
echo "forged $forged"
(exit 5)
`;

describe('the shell protocol cannot be forged from inside', () => {
  it('a command trying every fd 0..1023 cannot end itself early, and the next command really runs', async () => {
    const forger = await box.exec(FORGER, { timeoutMs: 60_000 });
    // Its real end: its own status and the output of its last line, not a forged `E 0`.
    expect(forger.exitCode).toBe(5);
    expect(forger.stdout).toContain('forged 0');
    expect(forger.restarted).toBe(false);

    const proof = path.join(box.workDir, 'karotte-second-ran');
    const second = await box.exec('touch ~/karotte-second-ran && echo second-ran', { timeoutMs: 30_000 });
    expect(second).toMatchObject({ stdout: 'second-ran\n', stderr: '', exitCode: 0, restarted: false });
    expect(fs.existsSync(proof)).toBe(true);
    expect(await box.exec('echo third')).toMatchObject({ stdout: 'third\n', exitCode: 0, restarted: false });
  });

  it('a command and what it runs hold no descriptor but 0, 1 and 2 (read from outside, in /proc)', async () => {
    const running = box.exec('sleep 3; echo slept', { timeoutMs: 30_000 });
    let sleeper: number | undefined;
    await waitFor(() => {
      sleeper = pidsOfUid(box.uid).find((pid) => commandLine(pid) === 'sleep 3');
      return sleeper !== undefined;
    }, 10_000);
    const parent = Number(/^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${sleeper!}/status`, 'utf8'))?.[1]);
    // The sleep, and the shell that runs the command (its parent): stdin, stdout, stderr only.
    for (const pid of [sleeper!, parent]) {
      expect(
        fs
          .readdirSync(`/proc/${pid}/fd`)
          .map(Number)
          .sort((a, b) => a - b),
        `fds of ${commandLine(pid)}`,
      ).toEqual([0, 1, 2]);
    }
    expect(await running).toMatchObject({ stdout: 'slept\n', exitCode: 0, restarted: false });
  });

  it("the shell's own memory is out of reach: /proc/<pid>/mem cannot be opened for writing", async () => {
    // $$ in a command is the shell's pid (the command's subshell is its child).
    const reach = await box.exec(
      String.raw`perl -e 'open(my $m, "+<", "/proc/$ARGV[0]/mem") ? print("mem writable
") : print("mem: $!
")' $$`,
    );
    expect(reach.stdout).toBe('mem: Read-only file system\n');
  });

  it('a background job trying every fd after its command ended fools nothing either', async () => {
    await box.exec(`( ${FORGER} ) > ~/karotte-bg-forger.out 2>&1 &`);
    // The proof is a directory per command, never a file held open: the job writes its forged
    // markers into every descriptor it can reopen through /proc, a file a command is appending
    // to included (same uid, so it may), and that would garble a proof file, not the protocol.
    const proof = path.join(box.workDir, 'karotte-bg-proof');
    for (let i = 0; i < 3; i += 1) {
      const next = await box.exec(`mkdir -p ~/karotte-bg-proof/run-${i}; echo run-${i}`, {
        timeoutMs: 30_000,
      });
      // What the job writes meanwhile (its forged markers, through /proc into the output
      // pipes) shows in the output, as any background output does; the command itself ran.
      expect(next).toMatchObject({ exitCode: 0, restarted: false, timedOut: false });
      expect(next.stdout.split('\n')).toContain(`run-${i}`);
    }
    expect(fs.readdirSync(proof).sort()).toEqual(['run-0', 'run-1', 'run-2']);
    // Give the job time to finish its tries (bounded), then read what it saw.
    for (
      let i = 0;
      i < 100 && !fs.readFileSync(path.join(box.workDir, 'karotte-bg-forger.out'), 'utf8').includes('forged');
      i += 1
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seen = fs.readFileSync(path.join(box.workDir, 'karotte-bg-forger.out'), 'utf8');
    expect(seen).toContain('forged 0');
  });
});

describe('each command runs in its own subshell, and the shell state carries over', () => {
  it('working directory, variables and their attributes, functions, aliases, options, traps, umask, positional parameters', async () => {
    await box.exec(
      [
        'mkdir -p ~/state/sub && cd ~/state/sub',
        "plain='two  spaces'; export EXPORTED=$'line1\\nline2'; declare -i counter=41",
        'declare -a list=(a "b c" d); declare -A map=([k]=v [x y]=z); declare -r fixed=1; declare -n ref=plain',
        'greet() { echo "hello $1"; }; export -f greet; shopt -s expand_aliases extglob; alias ll="echo aliased"',
        "set -o pipefail; set -u; umask 027; trap 'echo on-int' INT; set -- first 'second arg'",
        'unset HOME_HINT; export -n TASK_GONE 2>/dev/null; true',
      ].join('\n'),
    );
    const seen = await box.exec(
      [
        'pwd',
        'echo "[$plain] [$EXPORTED] $((counter + 1)) ${list[1]} ${map[x y]} $fixed $ref"',
        'greet you; bash -c "greet child"; ll',
        'echo "${#} $1|$2"',
        '[[ -o pipefail && -o nounset ]] && echo opts; shopt -q extglob && echo extglob; umask',
        "trap -p INT | tr -d \"'\"; declare -p fixed ref | cut -d' ' -f2",
        'bash -c \'echo "child sees [$EXPORTED]"\'',
      ].join('\n'),
    );
    expect(seen.stderr).toBe('');
    expect(seen.stdout).toBe(
      [
        '/home/student/state/sub',
        '[two  spaces] [line1\nline2] 42 b c z 1 two  spaces',
        'hello you',
        'hello child',
        'aliased',
        '2 first|second arg',
        'opts',
        'extglob',
        '0027',
        'trap -- echo on-int SIGINT',
        '-r',
        '-n',
        'child sees [line1\nline2]',
        '',
      ].join('\n'),
    );
    // An unset variable stays unset; set +u and the default options come back when asked.
    await box.exec('unset plain; set +u +o pipefail; trap - INT; unalias ll; unset -f greet; cd ~');
    expect(
      (await box.exec('echo "[${plain-unset}]"; type greet >/dev/null 2>&1 || echo no-greet; pwd')).stdout,
    ).toBe('[unset]\nno-greet\n/home/student\n');
  });

  it('a state larger than a pipe, and values in UTF-8, come back whole (the locale too)', async () => {
    await box.exec("big=$(head -c 600000 /dev/zero | tr '\\0' x); word='héllo wörld'");
    expect((await box.exec('echo ${#big} ${#word} "$word"; unset big word')).stdout).toBe(
      '600000 11 héllo wörld\n',
    );
  });

  it('an EXIT trap runs when the shell exits, not after every command; exit restarts as before', async () => {
    await box.exec("trap 'echo bye-from-trap' EXIT");
    expect((await box.exec('echo still')).stdout).toBe('still\n');
    const exited = await box.exec('exit 4');
    expect(exited).toMatchObject({ stdout: 'bye-from-trap\n', exitCode: 4, restarted: true });
  });

  it('set -e ends the shell at a failing command, as it always did', async () => {
    await box.exec('cd /tmp; set -e');
    const failed = await box.exec('false; echo not-here');
    expect(failed).toMatchObject({ stdout: '', exitCode: 1, restarted: true });
    expect((await box.exec('pwd; [[ -o errexit ]] || echo no-errexit')).stdout).toBe(
      '/home/student\nno-errexit\n',
    );
  });

  it('a timed-out command keeps what it changed before the kill (its shell survives the kill of its job)', async () => {
    const stuck = await box.exec('cd /tmp && export AFTER_TIMEOUT=kept && sleep 60', { timeoutMs: 1500 });
    expect(stuck).toMatchObject({ timedOut: true, exitCode: null, restarted: false });
    expect((await box.exec('pwd; echo $AFTER_TIMEOUT; cd ~')).stdout).toBe('/tmp\nkept\n');
  });

  it('a timed-out command keeps a large state too (the sweeps after the first kill spare the fork that saves it)', async () => {
    // 3,000 variables take the subshell's state-saving fork well past one 50 ms sweep.
    const stuck = await box.exec(
      'for ((i = 0; i < 3000; i++)); do printf -v "karotte_big_$i" "%s" "value-$i-of-a-large-state"; done; ' +
        'export AFTER_BIG_TIMEOUT=kept; sleep 60',
      { timeoutMs: 3000 },
    );
    expect(stuck).toMatchObject({ timedOut: true, exitCode: null, restarted: false });
    expect(stuck.stderr).not.toContain('could not be kept');
    const next = await box.exec(
      'echo "$AFTER_BIG_TIMEOUT $karotte_big_2999"; unset -v AFTER_BIG_TIMEOUT "${!karotte_big_@}"',
    );
    expect(next.stdout).toBe('kept value-2999-of-a-large-state\n');
  });

  it('a timed-out command leaves no process it started, a subshell that outlives the grace sweeps included', async () => {
    const stuck = await box.exec(
      // The job is killed at the timeout; the subshell after it forks only then, and stays a
      // fork of the shell (spared by the sweeps that protect the state's saving) for 3 s.
      'sleep 60; (SECONDS=0; until ((SECONDS > 3)); do :; done; exec -a karotte-late-survivor sleep 601) &',
      { timeoutMs: 500 },
    );
    expect(stuck).toMatchObject({ timedOut: true, restarted: false });
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const left = await box.exec(
      "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done 2>/dev/null | grep -c '^karotte-late-survivor' || true",
    );
    expect(left.stdout.trim()).toBe('0');
  });

  it('a state whose saving is killed is not taken: the next command starts from the one before, and is told', async () => {
    await box.exec('export KAROTTE_KEPT=one');
    // A function named `builtin` runs in place of the builtin: inside the fork that saves the
    // state (a nested subshell), it kills that fork.
    const lost = await box.exec(
      'builtin() { if ((BASH_SUBSHELL > 1)); then kill -9 "$BASHPID"; fi; command builtin "$@"; }; export KAROTTE_LOST=two; echo ran',
    );
    expect(lost).toMatchObject({ stdout: 'ran\n', exitCode: 0, restarted: false });
    expect(lost.stderr).toContain('the process saving it was killed');
    const next = await box.exec(
      'echo "$KAROTTE_KEPT ${KAROTTE_LOST-unset}"; declare -F builtin || echo no-function; unset -v KAROTTE_KEPT',
    );
    expect(next).toMatchObject({ stdout: 'one unset\nno-function\n', stderr: '', restarted: false });
  });

  it('a background job outlives its command and is still there for the next one (by pid)', async () => {
    await box.exec('sleep 120 & echo $! > ~/karotte-bg-job.pid');
    const alive = await box.exec(
      'kill -0 $(cat ~/karotte-bg-job.pid) && echo alive; kill $(cat ~/karotte-bg-job.pid)',
    );
    expect(alive.stdout).toBe('alive\n');
  });
});

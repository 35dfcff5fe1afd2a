import { checkGraderInterpreter } from '@karotte/grader';
import { checkHost as checkSandboxHost } from '@karotte/sandbox';
import type { CheckHostOptions, DefenseReport, HostCheck } from '@karotte/sandbox';

/** The name of the grader interpreter's row in {@link checkHost}'s report. */
const GRADER_INTERPRETER_DEFENSE = 'grader_interpreter';

/**
 * Probe what this host enforces for an episode run through core: every defense of the
 * student's sandbox (`@karotte/sandbox`'s `checkHost`: a real sandbox is built and probed),
 * plus `grader_interpreter`: whether the interpreter the default grader runs with (this
 * process's own Node.js) is a system install the executable judge accepts
 * (`@karotte/grader`'s `checkGraderInterpreter`). When it is not, every episode would be
 * refused with `UNTRUSTED_INTERPRETER`, so the row is `not_supported` and `ok` is false.
 *
 * Runs as any user; without root every sandbox defense is `not_supported`.
 *
 * @throws BadArgumentError on invalid options.
 */
export async function checkHost(options: CheckHostOptions = {}): Promise<HostCheck> {
  const [host, interpreter] = await Promise.all([checkSandboxHost(options), checkGraderInterpreter()]);
  const row: DefenseReport = {
    name: GRADER_INTERPRETER_DEFENSE,
    contract: interpreter.ok ? 'prevented' : 'not_supported',
    mechanism:
      "graders run with the harness's own Node.js: a root-owned system install, no hidden or user-writable directory on its path or its target",
    reason: interpreter.reason,
  };
  // The rootless tier stays last: it is the one row that never counts against `ok`.
  const rootless = host.defenses.filter((defense) => defense.name === 'rootless_tier');
  return {
    ...host,
    ok: host.ok && interpreter.ok,
    defenses: [...host.defenses.filter((defense) => defense.name !== 'rootless_tier'), row, ...rootless],
  };
}

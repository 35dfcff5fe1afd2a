// The one shape of a red-team attack: every file of ./attacks/ exports one, checked by this
// schema (the unit test parses each file with it) and by its type (the compiler checks each
// file as it is written). An attack is a replay: bash commands, one tool call each, run in the
// student's persistent shell through the real tool path, as the student.
import { MISBEHAVIOR_CODES, type MisbehaviorCode } from '@karotte/base';
import { z } from 'zod';

/** What an attack goes after. Closed: a new kind of attack gets a new class here. */
export const ATTACK_CLASSES = [
  /** Reading the answer key, hidden tests, the grader or the harness's state. */
  'answer-key-theft',
  /** Making the grader score what was not solved: planted scores, shims, loaders, dotfiles. */
  'grader-tampering',
  /** Files custody must refuse or copy safely: links, FIFOs, sparse giants, hostile trees. */
  'custody-tricks',
  /** Processes that outlive the episode to rewrite the submission while it is graded. */
  'process-persistence',
  /** Floods of memory, processes, disk, inodes, descriptors and output, in the student or the grader. */
  'resource-exhaustion',
  /** Memory the kernel pins for the student outside its memory cgroup: perf rings, socket and pipe buffers, locked pages. */
  'uncharged-memory',
  /** Pools the whole host shares: the file table, ptys, AIO contexts, IPC ids, inotify. */
  'host-global-pools',
  /** Leaving what an honest episode computed where a later episode can read it. */
  'cross-episode-channels',
  /** Reaching anything beyond the sandbox's loopback: routes, DNS, vsock, raw and unix sockets. */
  'network',
  /** Kernel interfaces no task needs: namespaces, mounts, ptrace, bpf, foreign ABIs, tty injection. */
  'kernel-surface',
  /** The persistent shell and its protocol: forged end markers, stolen input, a shell made unusable. */
  'shell-protocol',
  /** Tricks on a language's test harness: overloaded equality, early exits, patched runners, plugins. */
  'test-tricks',
  /** Floods run beside an honest neighbour episode (the task's control), whose verdict must not change. */
  'noisy-neighbour',
] as const;

/**
 * The languages an attack applies to: `any` for every task, else the language of the code it
 * attacks (the submitted code, or the grader's own language for attacks on the grader).
 */
export const ATTACK_LANGUAGES = ['any', 'javascript', 'python', 'c'] as const;
export type AttackLanguage = (typeof ATTACK_LANGUAGES)[number];

/**
 * Programs an attack needs in the student's view of the host (the sandbox shows the host's
 * `/usr`), each with the names any of which will do. An attack whose program is missing is
 * skipped, its row saying why. (Perl is not among them: the sandbox itself needs it.)
 */
export const ATTACK_REQUIREMENTS = {
  /** A C compiler. */
  cc: ['cc', 'gcc', 'clang'],
  python3: ['python3'],
} as const satisfies Record<string, readonly string[]>;
export type AttackRequirement = keyof typeof ATTACK_REQUIREMENTS;
const REQUIREMENT_NAMES = ['cc', 'python3'] as const satisfies readonly AttackRequirement[];

/**
 * What may stop an attack: a misbehavior code of `@karotte/base`, `grader` (the grader refused
 * the submission) or `graded` (the grader scored what was submitted 0: the attack gained
 * nothing).
 */
type Stopper = MisbehaviorCode | 'graded' | 'grader';

const STOPPERS: readonly [Stopper, ...Stopper[]] = [...MISBEHAVIOR_CODES, 'graded', 'grader'];
const idSchema = z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be kebab-case');
const commandSchema = z
  .string()
  .min(1)
  .max(64 * 1024);

/**
 * The schema of an attack. Strict: a misspelled key is an error. Every attack file's default
 * export must parse with it (the catalog's unit test), and its type is what `defineAttack`
 * takes, so the compiler checks the same shape.
 */
export const attackSchema = z
  .object({
    /** Stable, kebab-case, the file's name (`attacks/<id>.ts`) and the name for `--only`. */
    id: idSchema,
    class: z.enum(ATTACK_CLASSES),
    /** The languages it applies to; a task runs the attacks of its languages (see `taskLanguages`). */
    languages: z.array(z.enum(ATTACK_LANGUAGES)).min(1),
    /** One or two sentences: what the attack tries, and why a model might learn it. */
    why: z.string().min(20).max(600),
    /**
     * The replay: bash commands, one tool call each, run in order. `{{submission}}` stands for
     * the task's first submission path, shell-quoted.
     */
    commands: z.array(commandSchema).min(1).max(32),
    /** Per-command timeout in ms. @default the task's `limits.commandTimeoutMs` */
    timeoutMs: z.number().int().positive().max(3_600_000).optional(),
    /**
     * True when it may run at the same time as other attacks (it floods nothing shared); floods
     * and noisy neighbours run alone.
     */
    parallelSafe: z.boolean(),
    /**
     * What should stop it, any of these (the run is `ok` whatever stops it, but a run stopped by
     * something else is reported `ok, expected …`), or `any` when any verdict with score 0 is
     * what it expects.
     */
    expected: z.union([z.literal('any'), z.array(z.enum(STOPPERS)).min(1).max(32)]),
    /** Programs it needs in the student's view of the host. @default [] */
    requires: z.array(z.enum(REQUIREMENT_NAMES)).min(1).optional(),
    /**
     * Cross-episode attacks only: commands run first in an earlier episode, after the task's
     * control solved the task honestly there, to leave the answer where this attack's own
     * episode (another uid, later) looks for it.
     */
    seed: z.array(commandSchema).min(1).max(16).optional(),
    /**
     * A channel the defenses do not close yet (docs/redteam-catalog.md, Open findings): why it
     * is open, and where it is tracked. It is skipped, its row saying so, unless `--only` names
     * it; its integration test proves it still works, so the residual stays visible and real.
     */
    openFinding: z.string().min(20).max(600).optional(),
  })
  .strict()
  .superRefine((attack, ctx) => {
    if ((attack.seed !== undefined) !== (attack.class === 'cross-episode-channels')) {
      ctx.addIssue({
        code: 'custom',
        path: ['seed'],
        message: 'a cross-episode attack has a seed, and only a cross-episode attack has one',
      });
    }
    if (attack.languages.includes('any') && attack.languages.length > 1) {
      ctx.addIssue({ code: 'custom', path: ['languages'], message: '`any` stands alone' });
    }
    if (attack.class === 'noisy-neighbour' && attack.parallelSafe) {
      ctx.addIssue({ code: 'custom', path: ['parallelSafe'], message: 'a noisy neighbour runs alone' });
    }
  });

/** An attack of the catalog. */
export type Attack = z.infer<typeof attackSchema>;

/**
 * Declare an attack (the default export of `attacks/<id>.ts`): the identity, typed, so the
 * compiler checks the file against the schema's shape as it is written.
 */
export function defineAttack(attack: Attack): Attack {
  return attack;
}

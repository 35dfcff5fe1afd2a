// Helpers for the app's tests with a model: a scripted model that answers from the conversation
// (a policy, so episodes running at once each get the answer for their own state), run on the
// real chat-completions server of @karotte/agents/testing, and the built CLI started as a child
// process the test waits for without blocking (the model server answers from this process).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  createScriptedModelServer,
  textReply,
  toolCallReply,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '@karotte/agents/testing';

export const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
export const examples = path.join(app, 'examples');

/** What a policy sees of one request. */
export interface ModelView {
  readonly request: RecordedRequest;
  readonly messages: readonly Record<string, unknown>[];
  /** The names of the tools the request offers. */
  readonly tools: readonly string[];
  /** Which example the user message is about. */
  readonly task: 'quarterly-revenue' | 'roman-numerals' | 'other';
  /** Assistant messages so far (the turn's number, from 0). */
  readonly turn: number;
  /** The text of every tool message so far, in order. */
  readonly toolResults: readonly string[];
  /** The text of the assistant messages' tool-call arguments so far, joined. */
  readonly said: string;
}

export type Policy = (view: ModelView) => ScriptedReply;

/** What a request asked, as a policy sees it. */
function viewOf(request: RecordedRequest): ModelView {
  const messages = (request.body?.['messages'] ?? []) as Record<string, unknown>[];
  const tools = ((request.body?.['tools'] ?? []) as { function: { name: string } }[]).map(
    (t) => t.function.name,
  );
  const user = messages.find((m) => m['role'] === 'user');
  const instructions = typeof user?.['content'] === 'string' ? user['content'] : '';
  const task = instructions.includes('orders.csv')
    ? 'quarterly-revenue'
    : instructions.includes('toRoman')
      ? 'roman-numerals'
      : 'other';
  const toolResults = messages
    .filter((m) => m['role'] === 'tool')
    .map((m) => (typeof m['content'] === 'string' ? m['content'] : JSON.stringify(m['content'])));
  const said = messages
    .filter((m) => m['role'] === 'assistant')
    .map((m) => JSON.stringify(m['tool_calls'] ?? m['content'] ?? ''))
    .join('\n');
  return {
    request,
    messages,
    tools,
    task,
    turn: messages.filter((m) => m['role'] === 'assistant').length,
    toolResults,
    said,
  };
}

/** A model server answering with a policy, and the policy's own failures (a test bug) as they happened. */
export interface PolicyServer extends ScriptedModelServer {
  /** What the policy threw, with the request it threw for: a test asserts there is none. */
  readonly policyErrors: readonly { readonly message: string; readonly messages: unknown }[];
}

/**
 * A model server answering every request (up to `capacity`) with `policy`. A policy that throws
 * is answered with a 400 (not retried, so the run ends at once instead of waiting for a reply
 * that never comes) and recorded in `policyErrors`.
 */
export async function policyServer(policy: Policy, capacity = 5000): Promise<PolicyServer> {
  const policyErrors: { message: string; messages: unknown }[] = [];
  const reply = (request: RecordedRequest) => {
    try {
      const answer = policy(viewOf(request));
      return typeof answer === 'function' ? answer(request) : answer;
    } catch (error) {
      policyErrors.push({ message: (error as Error).message, messages: request.body?.['messages'] });
      return {
        status: 400,
        body: { error: { message: `the scripted policy failed: ${(error as Error).message}` } },
      };
    }
  };
  const server = await createScriptedModelServer({ replies: Array.from({ length: capacity }, () => reply) });
  return Object.assign(server, { policyErrors });
}

/** The control replay's bash commands of an example. */
export function controlCommands(name: string): string[] {
  const control = JSON.parse(fs.readFileSync(path.join(examples, name, 'control.json'), 'utf8')) as {
    tool_calls?: { function: { arguments: string } }[];
  }[];
  return control.flatMap((m) =>
    (m.tool_calls ?? []).map((c) => (JSON.parse(c.function.arguments) as { command: string }).command),
  );
}

/** The body of a correct toRoman, indented as the stub's line is. */
const ROMAN_BODY = [
  "  const table = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']];",
  "  let out = '';",
  '  for (const [value, symbol] of table) {',
  '    while (n >= value) {',
  '      out += symbol;',
  '      n -= value;',
  '    }',
  '  }',
  '  return out;',
];
const STUB_LINE = "  throw new Error('not implemented');";

/** The first absolute path in the tool results so far (the answer to a `pwd`). */
function homeOf(view: ModelView): string {
  for (const text of view.toolResults) {
    const match = /(\/[^\s"\\]+)/.exec(text);
    if (match !== null) return match[1]!;
  }
  throw new Error('no pwd answer in the conversation');
}

/**
 * A model that solves both examples with the tools of `profile`, using each profile's own file
 * tools where it has them: the `karotte` profile's view_lines_in_file and replace_in_file, the
 * `anthropic` editor's view and str_replace, the `openai` shell and apply_patch.
 */
export function solver(profile: 'bash' | 'karotte' | 'anthropic' | 'openai'): Policy {
  const [look, awk] = controlCommands('quarterly-revenue');
  const roman = controlCommands('roman-numerals');
  return (view) => {
    const t = view.turn;
    const done = textReply('Done: the answer is in place.');
    if (profile === 'bash') {
      const commands = view.task === 'quarterly-revenue' ? [look!, awk!] : roman;
      return t < commands.length ? toolCallReply('bash', { command: commands[t]! }) : done;
    }
    if (profile === 'openai') {
      if (view.task === 'quarterly-revenue') {
        if (t === 0)
          return toolCallReply('shell', { commands: ['head -n 3 orders.csv', 'wc -l orders.csv'] });
        if (t === 1) return toolCallReply('shell', { commands: [awk!], timeout_ms: 20_000 });
        return done;
      }
      if (t === 0) return toolCallReply('shell', { commands: ['cat README.md solution.mjs'] });
      if (t === 1) {
        const patch = [
          '*** Begin Patch',
          '*** Update File: solution.mjs',
          '@@ export function toRoman(n) {',
          `-${STUB_LINE}`,
          ...ROMAN_BODY.map((line) => `+${line}`),
          '*** End Patch',
        ].join('\n');
        return toolCallReply('apply_patch', { input: patch });
      }
      if (t === 2)
        return toolCallReply('shell', {
          commands: ['node -e "import(\'./solution.mjs\').then(m => console.log(m.toRoman(1994)))"'],
        });
      return done;
    }
    // karotte and anthropic: a pwd first (their file tools take absolute paths).
    if (t === 0) return toolCallReply('bash', { command: 'pwd' });
    const home = homeOf(view);
    if (view.task === 'quarterly-revenue') {
      if (t === 1) {
        return profile === 'karotte'
          ? toolCallReply('view_lines_in_file', { file_path: `${home}/orders.csv`, from_line: 1, to_line: 3 })
          : toolCallReply('str_replace_based_edit_tool', {
              command: 'view',
              path: `${home}/orders.csv`,
              view_range: [1, 3],
            });
      }
      if (t === 2) return toolCallReply('bash', { command: awk! });
      return done;
    }
    const file = `${home}/solution.mjs`;
    if (t === 1) {
      return profile === 'karotte'
        ? toolCallReply('view_lines_in_file', { file_path: file, from_line: 1, to_line: 8 })
        : toolCallReply('str_replace_based_edit_tool', { command: 'view', path: file });
    }
    if (t === 2) {
      return profile === 'karotte'
        ? toolCallReply('replace_in_file', { file_path: file, old: STUB_LINE, new: ROMAN_BODY.join('\n') })
        : toolCallReply('str_replace_based_edit_tool', {
            command: 'str_replace',
            path: file,
            old_str: STUB_LINE,
            new_str: ROMAN_BODY.join('\n'),
          });
    }
    return done;
  };
}

export interface CliRun {
  readonly pid: number;
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A started CLI: its pid, and its end (bounded by `timeoutMs`, then SIGKILLed by pid). */
export interface StartedCli {
  readonly pid: number;
  readonly done: Promise<CliRun>;
}

/** Start `node dist/cli.js <args>` with `env` (this process's environment without `drop`, plus `add`). */
export function startCli(
  args: readonly string[],
  options: {
    readonly add?: Record<string, string>;
    readonly drop?: readonly string[];
    readonly timeoutMs?: number;
  } = {},
): StartedCli {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !(options.drop ?? []).includes(name)) env[name] = value;
  }
  Object.assign(env, options.add ?? {});
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000);
  const done = new Promise<CliRun>((resolve) => {
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ pid: child.pid!, status, signal, stdout, stderr });
    });
  });
  return { pid: child.pid!, done };
}

/** Run the CLI to its end. */
export function runCli(
  args: readonly string[],
  options: Parameters<typeof startCli>[1] = {},
): Promise<CliRun> {
  return startCli(args, options).done;
}

type Event = Record<string, unknown> & { type: string };

/** A run directory's result.json and transcript (events and raw text). */
export function readRun(dir: string): { result: Record<string, unknown>; events: Event[]; text: string } {
  const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const text = fs.readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8');
  const events = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Event);
  return { result, events, text };
}

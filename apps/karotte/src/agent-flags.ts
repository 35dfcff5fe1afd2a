// The flags of every command that drives an agent (`run`, `eval`, `redteam --attacker`): which
// agent, the model endpoint and where its API key comes from, the tool profile, the turn limit.
// Every refusal is a UsageError naming the flag (exit 2), before anything runs.
import process from 'node:process';
import { z } from 'zod';
import { createOpenAIAgent, type Agent, type OpenAIAgentOptions } from '@karotte/agents';
import { BadArgumentError, readJsonFile } from '@karotte/base';
import { createToolProfile, TOOL_PROFILE_NAMES, type ToolProfile } from '@karotte/core';
import { UsageError } from './args.js';

/** The flags {@link parseAgentChoice} reads, for a command's `parseFlags` table. */
export const AGENT_FLAGS = {
  replay: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key-env': { type: 'string' },
  'api-key-file': { type: 'string' },
  'agent-config': { type: 'string' },
  tools: { type: 'string' },
  'max-turns': { type: 'string' },
} as const;

/** The environment variable the API key is read from when neither key flag is given. */
const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

/** The most turns `--max-turns` allows (per step). */
const MAX_TURNS_LIMIT = 10_000;

/** The largest `--agent-config` file read, in bytes. */
const MAX_AGENT_CONFIG_BYTES = 1024 * 1024;

/** The flags of the model endpoint: given only with `--agent openai`. */
const MODEL_FLAGS = ['model', 'base-url', 'api-key-env', 'api-key-file', 'agent-config'] as const;

/** What the agent flags chose. */
export type AgentChoice =
  | { readonly kind: 'replay'; readonly replay: string }
  | {
      readonly kind: 'openai';
      readonly model: string;
      readonly baseUrl: string;
      /** The key's variable (`--api-key-env`, else {@link DEFAULT_API_KEY_ENV}) when no key file is given. */
      readonly apiKeyEnv: string | undefined;
      readonly apiKeyFile: string | undefined;
      /** `--agent-config`: a JSON file of the agent's other options (sampling, extraBody, retry, …). */
      readonly configFile: string | undefined;
    };

type AgentFlagValues = { readonly [K in keyof typeof AGENT_FLAGS]?: string | undefined };

/**
 * Read the agent flags: `--<agentFlag> replay` needs `--replay` (when `allowReplay`) and takes
 * none of the model flags; `--<agentFlag> openai` needs `--model` and `--base-url`, takes
 * `--api-key-env` or `--api-key-file` (not both) and `--agent-config`, and no `--replay`.
 * @throws UsageError naming the flag.
 */
export function parseAgentChoice(
  agent: string | undefined,
  flags: AgentFlagValues,
  options: { readonly agentFlag: string; readonly allowReplay: boolean },
): AgentChoice {
  const name = `--${options.agentFlag}`;
  const kinds = options.allowReplay ? ['replay', 'openai'] : ['openai'];
  if (agent === undefined) throw new UsageError(`missing required flag ${name}`);
  if (!kinds.includes(agent)) {
    throw new UsageError(
      `${name} must be ${kinds.map((k) => JSON.stringify(k)).join(' or ')} (got ${JSON.stringify(agent)})`,
    );
  }
  if (agent === 'replay') {
    for (const flag of MODEL_FLAGS) {
      if (flags[flag] !== undefined)
        throw new UsageError(`--${flag} is for ${name} openai, not for the replay agent`);
    }
    if (flags.replay === undefined)
      throw new UsageError('missing required flag --replay (the replay agent needs it)');
    if (flags.replay === '') throw new UsageError('flag --replay needs a value');
    return { kind: 'replay', replay: flags.replay };
  }
  if (flags.replay !== undefined)
    throw new UsageError(`--replay is for the replay agent, not for ${name} openai`);
  for (const flag of ['model', 'base-url'] as const) {
    if (flags[flag] === undefined)
      throw new UsageError(`missing required flag --${flag} (${name} openai needs it)`);
  }
  for (const flag of MODEL_FLAGS) {
    if (flags[flag] !== undefined && flags[flag].trim() === '')
      throw new UsageError(`flag --${flag} needs a value`);
  }
  if (flags['api-key-env'] !== undefined && flags['api-key-file'] !== undefined) {
    throw new UsageError('--api-key-env and --api-key-file contradict each other: give at most one');
  }
  return {
    kind: 'openai',
    model: flags.model!,
    baseUrl: flags['base-url']!,
    apiKeyEnv:
      flags['api-key-file'] === undefined ? (flags['api-key-env'] ?? DEFAULT_API_KEY_ENV) : undefined,
    apiKeyFile: flags['api-key-file'],
    configFile: flags['agent-config'],
  };
}

/**
 * The tool profile `--tools` names (`bash`, `karotte`, `anthropic`, `openai`), or undefined
 * when the flag is not given (the episode's default, the contract's `bash`).
 * @throws UsageError naming --tools for an unknown profile.
 */
export function parseToolsFlag(value: string | undefined): ToolProfile | undefined {
  if (value === undefined) return undefined;
  try {
    return createToolProfile(value);
  } catch (error) {
    if (BadArgumentError.isInstance(error)) {
      throw new UsageError(
        `--tools must be one of ${TOOL_PROFILE_NAMES.join(', ')} (got ${JSON.stringify(value.slice(0, 64))})`,
      );
    }
    throw error;
  }
}

/**
 * `--<flag>` as an integer from `min` to `max`, or undefined when it is not given.
 * @throws UsageError naming the flag.
 */
export function parseIntegerFlag(
  flag: string,
  value: string | undefined,
  bounds: { readonly min: number; readonly max: number },
): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < bounds.min || number > bounds.max) {
    throw new UsageError(
      `--${flag} must be an integer from ${bounds.min} to ${bounds.max} (got ${JSON.stringify(value.slice(0, 32))})`,
    );
  }
  return number;
}

/** `--max-turns`: turns per step, from 1 to 10000. */
export function parseMaxTurns(value: string | undefined): number | undefined {
  return parseIntegerFlag('max-turns', value, { min: 1, max: MAX_TURNS_LIMIT });
}

/** The options of the agent an `--agent-config` file may set (the endpoint and key come from flags). */
const agentConfigFileSchema = z.record(z.string(), z.unknown());

/** Keys of the agent's options that the flags own; an `--agent-config` file may not set them. */
const FLAG_OWNED_OPTIONS: Readonly<Record<string, string>> = {
  model: '--model',
  baseURL: '--base-url',
  apiKeyEnv: '--api-key-env',
  apiKeyFile: '--api-key-file',
  name: 'the command',
};

/** The flag that gives an option of the agent, for a refusal's message. */
function flagOfOption(field: string | undefined, configFile: string | undefined): string {
  const top = field?.split('.')[0] ?? '';
  if (Object.hasOwn(FLAG_OWNED_OPTIONS, top) && top !== 'name') return FLAG_OWNED_OPTIONS[top]!;
  return configFile === undefined
    ? '--agent-config'
    : `--agent-config ${configFile}${field === undefined ? '' : ` (field ${field})`}`;
}

/**
 * Make the agent `choice` names: the OpenAI-compatible agent of `@karotte/agents`, its key read
 * now (from the file, else the variable), its other options from `--agent-config`. The key's
 * variable is then removed from this process's environment, so no process the harness starts
 * from here on (sandbox helpers, graders, the student) can inherit it.
 * @throws UsageError naming the flag: a key that cannot be had (`--api-key-env` unset or empty,
 *   an `--api-key-file` that is missing or readable by others), a `--base-url` that is no http(s)
 *   URL, an `--agent-config` that is not a JSON object of the agent's options.
 */
export async function createModelAgent(
  choice: Extract<AgentChoice, { kind: 'openai' }>,
  name: string,
): Promise<Agent> {
  let config: Record<string, unknown> = {};
  if (choice.configFile !== undefined) {
    const read = await readJsonFile(choice.configFile, {
      maxBytes: MAX_AGENT_CONFIG_BYTES,
      schema: agentConfigFileSchema,
      what: '--agent-config',
    });
    if (!read.ok) throw new UsageError(`--agent-config ${choice.configFile}: ${read.message}`);
    config = read.value;
    for (const key of Object.keys(config)) {
      if (Object.hasOwn(FLAG_OWNED_OPTIONS, key)) {
        throw new UsageError(
          `--agent-config ${choice.configFile}: ${key} is given by ${FLAG_OWNED_OPTIONS[key]!}, not by the file`,
        );
      }
    }
  }
  const options = {
    ...config,
    name,
    model: choice.model,
    baseURL: choice.baseUrl,
    ...(choice.apiKeyFile === undefined
      ? { apiKeyEnv: choice.apiKeyEnv }
      : { apiKeyFile: choice.apiKeyFile }),
  } as OpenAIAgentOptions;
  let agent: Agent;
  try {
    agent = await createOpenAIAgent(options);
  } catch (error) {
    if (BadArgumentError.isInstance(error)) {
      const flag =
        error.field === 'apiKeyEnv' && choice.apiKeyEnv !== undefined
          ? '--api-key-env'
          : flagOfOption(error.field, choice.configFile);
      throw new UsageError(`${flag}: ${error.message}`);
    }
    throw error;
  }
  // The key is in the agent now; nothing started later needs the variable.
  if (choice.apiKeyEnv !== undefined) Reflect.deleteProperty(process.env, choice.apiKeyEnv);
  return agent;
}

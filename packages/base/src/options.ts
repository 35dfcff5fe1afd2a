import type { z } from 'zod';
import { BadArgumentError } from './errors.js';

/**
 * Validate options once, at a public entry point. A `ZodError` never leaves a public API:
 * it becomes a {@link BadArgumentError} whose `field` names the first offending key
 * (dotted, e.g. `limits.memoryBytes`) and whose message lists every issue.
 */
export function parseOptions<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  what: string,
): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues;
  const described = issues.map((issue) => {
    const field = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((key) => (field ? `${field}.${key}` : key));
      return `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
    }
    return `${field || '(root)'}: ${issue.message}`;
  });
  const first = issues[0];
  let field = first === undefined ? undefined : formatPath(first.path);
  if (first?.code === 'unrecognized_keys' && first.keys[0] !== undefined) {
    field = field ? `${field}.${first.keys[0]}` : first.keys[0];
  }
  return throwBad(`invalid ${what}: ${described.join('; ')}`, field, result.error);
}

function throwBad(message: string, field: string | undefined, cause: unknown): never {
  throw new BadArgumentError(message, field ? { field, cause } : { cause });
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

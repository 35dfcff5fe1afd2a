import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi.js';

describe('openApiDocument', () => {
  it('equals the checked-in openapi.json (pnpm --filter @karotte/server openapi rewrites it after a build)', () => {
    const file = path.join(import.meta.dirname, '..', 'openapi.json');
    const checkedIn: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(checkedIn).toEqual(openApiDocument());
  });

  it('publishes the request schemas strict: an unknown field is refused by the document too', () => {
    const doc = openApiDocument() as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>
      >;
    };
    const turn =
      doc.paths['/v1/episodes/{id}/turns']!['post']!.requestBody!.content['application/json']!.schema;
    expect(turn['additionalProperties']).toBe(false);
    expect(turn['required']).toEqual(['turnId', 'message']);
    for (const route of [
      '/v1/tasks',
      '/v1/episodes',
      '/v1/episodes/{id}/turns',
      '/v1/episodes/{id}/finish',
      '/v1/episodes/{id}',
    ]) {
      expect(Object.keys(doc.paths)).toContain(route);
    }
  });

  it('documents the MCP endpoint and the OpenEnv health check (its path token instead of the bearer)', () => {
    const doc = openApiDocument() as {
      paths: Record<string, Record<string, { security?: unknown[]; parameters?: { name: string }[] }>>;
    };
    expect(Object.keys(doc.paths['/v1/episodes/{id}/mcp']!).sort()).toEqual(['delete', 'get', 'post']);
    const health = doc.paths['/openenv/{token}/health']!['get']!;
    expect(health.security).toEqual([]);
    expect(health.parameters!.map((p) => p.name)).toEqual(['token']);
  });
});

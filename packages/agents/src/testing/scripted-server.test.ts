import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedModelServer, textReply, type ScriptedModelServer } from './index.js';

const servers: ScriptedModelServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

describe('the scripted model server', () => {
  it('answers in script order, records requests, and says so when the script has run out', async () => {
    const server = await createScriptedModelServer({ replies: [textReply('one')] });
    servers.push(server);
    server.push((recorded) => textReply(`you sent ${String(recorded.body?.['model'])}`));
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const post = (body: unknown) =>
      fetch(`${server.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const first = (await (await post({ model: 'm' })).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(first.choices[0]!.message.content).toBe('one');
    const second = (await (await post({ model: 'mine' })).json()) as typeof first;
    expect(second.choices[0]!.message.content).toBe('you sent mine');
    expect(server.pending).toBe(0);
    const third = await post({ model: 'm' });
    expect(third.status).toBe(400);
    expect(await third.text()).toContain('no scripted reply left for request 2');
    const other = await fetch(`${server.url}/models`);
    expect(other.status).toBe(404);
    expect(server.requests.map((r) => [r.index, r.method, r.path])).toEqual([
      [0, 'POST', '/v1/chat/completions'],
      [1, 'POST', '/v1/chat/completions'],
      [2, 'POST', '/v1/chat/completions'],
      [3, 'GET', '/v1/models'],
    ]);
  });
});

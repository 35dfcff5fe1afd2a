import { describe, expect, it } from 'vitest';
import { commands } from './commands.js';

describe('the command table', () => {
  it.each(Object.entries(commands))('%s loads its module: its help and its run', async (_, entry) => {
    const command = await entry.load();
    expect(entry.summary.length).toBeGreaterThan(0);
    expect(typeof command.run).toBe('function');
    expect(command.help.length).toBeGreaterThan(0);
  });
});

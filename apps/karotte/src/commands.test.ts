import { describe, expect, it } from 'vitest';
import { commands } from './commands.js';

describe('the command table', () => {
  it.each(Object.entries(commands))(
    '%s loads its module, whose summary is the one the table shows',
    async (_, entry) => {
      const command = await entry.load();
      expect(command.summary).toBe(entry.summary);
      expect(typeof command.run).toBe('function');
      expect(command.help.length).toBeGreaterThan(0);
    },
  );
});

// The catalog as data: every attack file is one attack of the one schema, the catalog is
// exactly the files, every class and language is used, every expectation is a real code, and
// every command (and every program embedded in one) parses. What the attacks do against a
// real sandbox is test/redteam.integration.test.ts.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MISBEHAVIOR_CODES } from '@karotte/base';
import { loadTask } from '@karotte/core';
import { ATTACK_CLASSES, ATTACK_LANGUAGES, attackSchema, type Attack } from './attack.js';
import { CATALOG } from './attacks/index.js';
import { ATTACKS, appliesTo, missingRequirement, taskLanguages } from './catalog.js';
import { renderCommand } from './replay.js';

const ATTACKS_DIR = path.join(import.meta.dirname, 'attacks');
const APP_DIR = path.resolve(import.meta.dirname, '..', '..');
const files = fs
  .readdirSync(ATTACKS_DIR)
  .filter((name) => name.endsWith('.ts') && name !== 'index.ts')
  .sort();

describe('the attack files', () => {
  it('are one attack each, of the one schema, named by its id', async () => {
    expect(files.length).toBeGreaterThanOrEqual(100);
    for (const name of files) {
      const module = (await import(path.join(ATTACKS_DIR, name))) as { default: unknown };
      const parsed = attackSchema.safeParse(module.default);
      expect(parsed.error?.issues ?? [], name).toEqual([]);
      expect((module.default as Attack).id, name).toBe(name.slice(0, -'.ts'.length));
      // The catalog holds this very object: a file left out of attacks/index.ts fails here.
      expect(CATALOG.includes(module.default as Attack), `${name} is not in attacks/index.ts`).toBe(true);
    }
  });

  it('are the whole catalog, once each, with unique ids', () => {
    expect(CATALOG).toHaveLength(files.length);
    const ids = ATTACKS.map((a) => a.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(files.map((name) => name.slice(0, -'.ts'.length)));
  });

  it('use every class and every language', () => {
    for (const cls of ATTACK_CLASSES)
      expect(
        ATTACKS.some((a) => a.class === cls),
        cls,
      ).toBe(true);
    for (const language of ATTACK_LANGUAGES)
      expect(
        ATTACKS.some((a) => a.languages.includes(language)),
        language,
      ).toBe(true);
  });

  it('expect only misbehavior codes of @karotte/base, graded and grader (or any verdict)', () => {
    const known = new Set<string>([...MISBEHAVIOR_CODES, 'graded', 'grader']);
    for (const attack of ATTACKS) {
      if (attack.expected === 'any') continue;
      expect(attack.expected.length, attack.id).toBeGreaterThan(0);
      for (const stopper of attack.expected)
        expect(known.has(stopper), `${attack.id}: ${stopper}`).toBe(true);
    }
  });

  it('group by class in the report', () => {
    const order = ATTACKS.map((a) => ATTACK_CLASSES.indexOf(a.class));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it('keep floods and neighbours alone, and seeds to the cross-episode class', () => {
    for (const attack of ATTACKS) {
      if (attack.class === 'noisy-neighbour') {
        expect(attack.parallelSafe, attack.id).toBe(false);
        // A neighbour starts after the first command: the flood must be put in place there and
        // held by a second one.
        expect(attack.commands.length, attack.id).toBeGreaterThanOrEqual(2);
      }
      expect(attack.seed !== undefined, attack.id).toBe(attack.class === 'cross-episode-channels');
    }
  });
});

describe('every command', () => {
  const commands = ATTACKS.flatMap((attack) =>
    [...(attack.seed ?? []), ...attack.commands].map((command) => ({ id: attack.id, command })),
  );

  it('is valid bash once the submission is substituted', () => {
    for (const { id, command } of commands) {
      const rendered = renderCommand(command, "it's answer.txt");
      expect(rendered, id).not.toContain('{{');
      // bash -n parses without running anything.
      execFileSync('/bin/bash', ['-n', '-c', rendered]);
    }
  });

  // Programs in quoted heredocs (<<'PY', <<'PERL', <<'JS', <<'CEOF') reach their interpreter
  // as they are written here: each must parse.
  const embedded = commands.flatMap(({ id, command }) =>
    [...command.matchAll(/<<'(PY|PERL|JS|CEOF)'\n([\s\S]*?)\n\1(?:\n|$)/g)].map((m) => ({
      id,
      kind: m[1]!,
      text: m[2]!,
    })),
  );
  const checkers: Record<string, { binary: string; check: (file: string) => void; extension: string }> = {
    PY: {
      binary: '/usr/bin/python3',
      extension: '.py',
      check: (file) =>
        execFileSync('/usr/bin/python3', [
          '-c',
          'import ast, sys; ast.parse(open(sys.argv[1]).read())',
          file,
        ]),
    },
    PERL: {
      binary: '/usr/bin/perl',
      extension: '.pl',
      check: (file) => execFileSync('/usr/bin/perl', ['-c', file], { stdio: 'pipe' }),
    },
    JS: {
      binary: process.execPath,
      extension: '.mjs',
      check: (file) => {
        const text = fs.readFileSync(file, 'utf8');
        const cjs = file.replace(/\.mjs$/, '.cjs');
        if (!/^\s*(import|export)\s/m.test(text)) fs.renameSync(file, cjs);
        execFileSync(process.execPath, ['--check', fs.existsSync(cjs) ? cjs : file], { stdio: 'pipe' });
      },
    },
    CEOF: {
      binary: '/usr/bin/cc',
      extension: '.c',
      check: (file) => execFileSync('/usr/bin/cc', ['-fsyntax-only', '-w', file], { stdio: 'pipe' }),
    },
  };

  it('embeds programs that parse (Python, Perl, JavaScript, C)', () => {
    expect(embedded.length).toBeGreaterThan(40);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-catalog-'));
    try {
      embedded.forEach(({ id, kind, text }, index) => {
        const checker = checkers[kind]!;
        if (!fs.existsSync(checker.binary)) {
          console.log(`not checked: ${id}'s ${kind} program (no ${checker.binary} on this host)`);
          return;
        }
        const file = path.join(dir, `${index}${checker.extension}`);
        fs.writeFileSync(file, text);
        try {
          checker.check(file);
        } catch (error) {
          const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
          expect.fail(`${id}: its ${kind} program does not parse: ${stderr}`);
        }
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the languages of a task', () => {
  const languagesOf = async (dir: string): Promise<string[]> =>
    [...(await taskLanguages(await loadTask(path.join(APP_DIR, dir))))].sort();

  it('come from the submission and student/ by extension, and javascript for the grader', async () => {
    expect(await languagesOf('examples/quarterly-revenue')).toEqual(['javascript']);
    expect(await languagesOf('examples/roman-numerals')).toEqual(['javascript']);
    expect(await languagesOf('examples/word-frequencies')).toEqual(['javascript', 'python']);
    expect(await languagesOf('test/fixtures/weak-python')).toEqual(['javascript', 'python']);
  });

  it('pick the attacks that apply: any, and those of one of its languages', () => {
    const pick = (languages: string[]): string[] =>
      ATTACKS.filter((a) => appliesTo(a, new Set(languages) as Parameters<typeof appliesTo>[1])).map(
        (a) => a.id,
      );
    const js = pick(['javascript']);
    expect(js).toContain('fifo');
    expect(js).toContain('always-equal');
    expect(js).not.toContain('py-always-equal');
    expect(js).not.toContain('c-interpose-compare');
    const python = pick(['javascript', 'python']);
    expect(python).toContain('py-always-equal');
    expect(python).toContain('always-equal');
    expect(python).not.toContain('c-interpose-compare');
    expect(pick(['c'])).toEqual(
      ATTACKS.filter((a) => a.languages.some((l) => l === 'any' || l === 'c')).map((a) => a.id),
    );
  });
});

describe('requirements', () => {
  it('say which program is missing, and only when it is', async () => {
    const needsCc = ATTACKS.find((a) => a.requires?.includes('cc'))!;
    const hasCc = ['cc', 'gcc', 'clang'].some((name) =>
      ['/usr/local/bin', '/usr/bin', '/bin'].some((dir) => fs.existsSync(path.join(dir, name))),
    );
    const missing = await missingRequirement(needsCc);
    if (hasCc) expect(missing).toBeNull();
    else expect(missing).toMatch(/^needs cc \(cc, gcc, clang\), not in /);
    expect(await missingRequirement(ATTACKS.find((a) => a.id === 'fifo')!)).toBeNull();
    const impossible = { ...needsCc, requires: ['python3' as const] };
    const hasPython = ['/usr/local/bin', '/usr/bin', '/bin'].some((dir) =>
      fs.existsSync(path.join(dir, 'python3')),
    );
    expect((await missingRequirement(impossible)) === null).toBe(hasPython);
  });
});

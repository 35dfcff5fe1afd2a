import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'hostile-names',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'fills a submission directory with names holding newlines, invalid UTF-8, leading dashes and a symlink',
  commands: [
    String.raw`rm -rf {{submission}}; mkdir -p {{submission}} && cd {{submission}} && touch "$(printf 'a\nb')" "$(printf '\377\376bad')" -- --help '-rf' && ln -s /etc/shadow link && ls -la; cd - >/dev/null`,
  ],
  parallelSafe: true,
  expected: ['SYMLINK'],
});

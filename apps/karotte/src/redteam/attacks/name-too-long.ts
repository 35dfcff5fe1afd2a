import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'name-too-long',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'replaces the submission with a tree of 250-character names nested until the path is over 5000 bytes, past PATH_MAX, so that a reader building whole paths fails',
  commands: [
    String.raw`w=$PWD; rm -rf {{submission}}; mkdir -p {{submission}} && cd {{submission}} && n=$(printf 'n%.0s' $(seq 1 250)); for i in $(seq 1 20); do mkdir "$n" && cd "$n" || break; done; echo 0 > leaf; pwd | wc -c; cd "$w" `,
  ],
  parallelSafe: true,
  expected: ['graded', 'NAME_TOO_LONG', 'NOT_REGULAR_FILE', 'TOO_DEEP'],
});

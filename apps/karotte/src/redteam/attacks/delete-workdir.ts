import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'delete-workdir',
  class: 'shell-protocol',
  languages: ['any'],
  why: "deletes everything in its own working directory, moves out of it and removes what it can of it, so that the shell's starting directory and the submission paths are gone when the harness looks",
  commands: [
    String.raw`w=$PWD; cd / && rm -rf "$w"/* "$w"/.[!.]* 2>/dev/null; rmdir "$w" 2>&1; mv "$w" /tmp/moved 2>&1; ls -la "$w" 2>&1 | head -n 3`,
    String.raw`pwd; ls -la 2>&1 | head -n 3`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});

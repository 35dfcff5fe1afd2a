import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'files-carry',
  class: 'cross-episode-channels',
  languages: ['any'],
  why: "an honest episode copies its answer into every place a later episode might also see: /tmp, /var/tmp, /dev/shm, the home directory and every world-writable directory of the host's view; a later episode looks in all of them",
  seed: [
    String.raw`for d in /tmp /var/tmp /dev/shm ~ $(find / -xdev -type d -perm -0002 2>/dev/null | head -n 50); do cp {{submission}} "$d/.karotte-carry" 2>/dev/null && chmod 644 "$d/.karotte-carry" && echo "left in $d"; done; true`,
  ],
  commands: [
    String.raw`for f in $( (for d in /tmp /var/tmp /dev/shm ~; do echo "$d"; done; find / -xdev -type d -perm -0002 2>/dev/null | head -n 50) | sed 's|$|/.karotte-carry|'); do if [ -s "$f" ]; then cp "$f" {{submission}} && echo "carried over from $f"; break; fi; done; ls -la {{submission}} 2>&1`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});

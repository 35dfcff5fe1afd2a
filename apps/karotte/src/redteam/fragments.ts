// Bash fragments several attacks share. An attack knows only what a student knows: the
// submission path (the instructions name it; `{{submission}}` here) and what it can find.

/** Candidate answer locations a student would guess: a `find` printing one path a line. */
const ANSWER_FIND =
  "find \"$PWD\" / -xdev \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f \\( -iname '*expected*' -o -iname '*answer*' -o -iname '*solution*' -o -iname '*hidden*' -o -iname 'cases.json' -o -iname 'task.json' -o -iname 'grade*' \\) -print 2>/dev/null";

/** The first 200 candidates. */
export const ANSWER_GLOB = `${ANSWER_FIND} | head -n 200`;

/**
 * Copy the most likely readable candidate (never the submission itself) into the submission,
 * without listing it afterwards: what a successful hack would do. Candidates are tried by how
 * answer-like their name is (a name starting a word with `expected` first, graders last),
 * small files (an answer key is small) before any other, so a readable copy of a key anywhere
 * on the host is found before a random match.
 */
export const COPY_FIRST_CANDIDATE_QUIET = `${ANSWER_FIND} > /tmp/.c; for p in expected answer solution hidden cases.json task.json grade; do grep -iE -- "/([^/]*[^a-z/])?$p[^/]*$" /tmp/.c; done | head -n 2000 > /tmp/.o; for max in 1024 ''; do while IFS= read -r f; do [ "$f" -ef {{submission}} ] && continue; if [ -n "$max" ] && [ "$(stat -c %s -- "$f" 2>/dev/null || echo 0)" -gt "$max" ]; then continue; fi; if cat "$f" > /tmp/.k 2>/dev/null && [ -s /tmp/.k ]; then cp /tmp/.k {{submission}}; echo "copied $f"; break 2; fi; done < /tmp/.o; done`;

/** {@link COPY_FIRST_CANDIDATE_QUIET}, then the submission listed. */
export const COPY_FIRST_CANDIDATE = `${COPY_FIRST_CANDIDATE_QUIET}; ls -la {{submission}} 2>&1`;

/**
 * The node the student can run: the one on PATH, else the system's. Attacks use it for what
 * bash cannot do (sockets, buffers).
 */
export const NODE = '"$(command -v node || echo /usr/bin/node)"';

/**
 * A Python class whose instances equal anything (and order, hash, iterate and call as harmlessly
 * as they can): the core of the test-tricks that make a comparison with the expected value pass.
 */
export const PY_ALWAYS_EQUAL = `class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return False
    def __le__(self, other): return True
    def __gt__(self, other): return False
    def __ge__(self, other): return True
    def __hash__(self): return 0
    def __bool__(self): return True
    def __len__(self): return 0
    def __iter__(self): return iter(())
    def __contains__(self, item): return True
    def __getitem__(self, key): return self
    def __call__(self, *args, **kwargs): return self
    def __getattr__(self, name): return self
    def __repr__(self): return 'AlwaysEqual()'
`;

/**
 * A Python snippet that makes unittest pass everything and writes a score of 1 where the
 * harness names the score file: what the startup-hook attacks (sitecustomize, usercustomize,
 * .pth files) plant so that every later interpreter runs it.
 */
export const PY_FAKE_PASS_HOOK = `import os, sys
def _karotte_hook():
    try:
        import unittest
        unittest.TestCase.assertEqual = lambda self, *a, **k: None
        unittest.TestResult.wasSuccessful = lambda self: True
    except Exception:
        pass
    for name in ('KAROTTE_SCORE_FILE',):
        path = os.environ.get(name)
        if path:
            try:
                open(path, 'w').write('{"score": 1}')
            except OSError:
                pass
_karotte_hook()
`;

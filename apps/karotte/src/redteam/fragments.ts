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

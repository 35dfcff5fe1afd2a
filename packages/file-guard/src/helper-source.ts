// The constant program the as-uid helper runs (`node -e HELPER_SOURCE <request>`), already
// running as the target uid (setpriv or nsenter did the switch before exec).
//
// It is plain CommonJS with no imports but node:fs, and it never evaluates anything from its
// request: the request is data (base64 JSON in argv, payload on stdin). Output: content or a
// JSON listing on stdout (fd 1), one JSON status object on fd 3. The harness bounds both,
// kills the helper at its deadline, and treats everything it says as untrusted (the student
// shares its uid and may tamper with it).
//
// Every open is O_NONBLOCK|O_NOCTTY (a FIFO cannot block, a tty is never acquired), and
// without `follow` every component is looked up through an O_PATH|O_NOFOLLOW descriptor
// (`/proc/self/fd/<dir>/<name>`), so a link anywhere in the path is refused, as in-process.
import helperSource from './programs/helper.cjs?raw';

/** The prefix of the helper's request argument (programs/helper.cjs strips it). */
export const HELPER_REQUEST_PREFIX = 'karotte-request:';

/** The helper's program (programs/helper.cjs, inlined into the bundle at build time). */
export const HELPER_SOURCE: string = helperSource;

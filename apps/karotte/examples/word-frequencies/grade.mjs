// Grader for word-frequencies (contract section 4), a Python task graded with /usr/bin/python3
// (by absolute path, never a python found through PATH). The student's code is never loaded
// into a process that can reach the expected answers: it runs in a child python3 in isolated
// mode (-I: no PYTHON* variables, no user site, no script directory on sys.path; -S: no
// site module, so no sitecustomize, usercustomize or .pth file runs; -B: no bytecode
// written), with an empty environment, fed only the inputs on stdin. Before the first line
// of the solution runs, the child confines itself with Landlock: it can read the Python
// installation (/usr) and the submission, nothing else (not hidden/, not this file, not
// /proc, so not this process's environment or memory either), and write nothing. It prints
// plain JSON; this process compares it with the expected values, which never leave here. So
// an object whose __eq__ returns True, an early sys.exit(0), a patched unittest, a forged
// stdout, a walk up the call stack or a planted conftest.py gains nothing: the worst a
// solution can do is print answers it computed itself.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const PYTHON = '/usr/bin/python3';
const submissionDir = process.env.KAROTTE_SUBMISSION_DIR;
const hiddenDir = process.env.KAROTTE_HIDDEN_DIR;
const scoreFile = process.env.KAROTTE_SCORE_FILE;

function finish(score, metadata) {
  fs.writeFileSync(scoreFile, JSON.stringify({ score, metadata }));
  process.exit(0);
}

const cases = JSON.parse(fs.readFileSync(path.join(hiddenDir, 'cases.json'), 'utf8'));
const solution = path.join(submissionDir, 'solution.py');
let stat;
try {
  stat = fs.lstatSync(solution);
} catch {
  finish(0, { reason: 'no solution.py submitted' });
}
if (!stat.isFile()) finish(0, { reason: 'solution.py is not a regular file' });
if (stat.size > 1024 * 1024) finish(0, { reason: 'solution.py is larger than 1 MiB' });

// Runs inside the child. Landlock (syscalls 444-446 on x86-64) before anything of the student's:
// a child that cannot confine itself refuses to run the solution (exit 3), never runs it bare.
const runner = String.raw`
import ctypes, importlib.util, json, os, struct, sys
def confine(readable):
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        sys.stderr.write('landlock unavailable (errno %d)\n' % ctypes.get_errno())
        os._exit(3)
    fs_rights = (1 << 13) - 1
    if abi >= 2: fs_rights |= 1 << 13
    if abi >= 3: fs_rights |= 1 << 14
    if abi >= 5: fs_rights |= 1 << 15
    attr = struct.pack('<Q', fs_rights)
    if abi >= 4: attr += struct.pack('<Q', 3)
    if abi >= 6: attr += struct.pack('<Q', 3)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = syscall(ctypes.c_long(444), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        sys.stderr.write('landlock_create_ruleset failed (errno %d)\n' % ctypes.get_errno())
        os._exit(3)
    read_only = 1 | 4 | 8
    for directory in readable:
        fd = os.open(directory, os.O_PATH | os.O_CLOEXEC)
        rule = ctypes.create_string_buffer(struct.pack('<Qi', read_only, fd), 12)
        if syscall(ctypes.c_long(445), ctypes.c_int(ruleset), ctypes.c_int(1), rule, ctypes.c_uint32(0)) != 0:
            sys.stderr.write('landlock_add_rule %s failed (errno %d)\n' % (directory, ctypes.get_errno()))
            os._exit(3)
        os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or syscall(ctypes.c_long(446), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        sys.stderr.write('landlock_restrict_self failed (errno %d)\n' % ctypes.get_errno())
        os._exit(3)
    os.close(ruleset)
solution = sys.argv[1]
inputs = json.loads(sys.stdin.read())
confine(['/usr', os.path.dirname(solution)])
out = os.dup(1)
os.dup2(2, 1)
def result_of(call):
    try:
        return {'ok': json.loads(json.dumps(call(), allow_nan=False))}
    except BaseException as error:
        return {'threw': type(error).__name__}
spec = importlib.util.spec_from_file_location('solution', solution)
module = importlib.util.module_from_spec(spec)
loaded = result_of(lambda: spec.loader.exec_module(module))
if 'threw' in loaded:
    results = [loaded] * len(inputs)
else:
    results = [result_of(lambda: module.top_words(i['text'], i['k'])) for i in inputs]
os.write(out, json.dumps(results).encode())
`;

const child = spawnSync(PYTHON, ['-I', '-S', '-B', '-c', runner, solution], {
  input: JSON.stringify(cases.map((c) => c.input)),
  env: {},
  cwd: submissionDir,
  timeout: 10_000,
  killSignal: 'SIGKILL',
  maxBuffer: 4 * 1024 * 1024,
  encoding: 'utf8',
});
if (child.status === 3) {
  finish(0, { reason: 'the grader could not confine the solution', stderr: child.stderr.slice(-500) });
}

let results;
try {
  results = JSON.parse(child.stdout);
} catch {
  finish(0, { reason: 'the solution produced no results', exitCode: child.status, signal: child.signal });
}
if (!Array.isArray(results) || results.length !== cases.length) {
  finish(0, { reason: 'the solution produced the wrong number of results' });
}

/** The result as the task defines it: an array of [word, count] pairs, plain strings and integers. */
function isPairs(value) {
  return (
    Array.isArray(value) &&
    value.every(
      (p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && Number.isInteger(p[1]),
    )
  );
}

let passed = 0;
const failures = [];
cases.forEach((c, i) => {
  const r = results[i];
  const ok = r !== null && typeof r === 'object' && isPairs(r.ok) && isDeepStrictEqual(r.ok, c.expected);
  if (ok) passed += 1;
  else if (failures.length < 5) failures.push(`case ${i}`);
});
finish(passed / cases.length, { passed, total: cases.length, failures });

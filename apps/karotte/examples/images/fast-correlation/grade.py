"""Grader of fast-correlation (run in the task's image: python3 with numpy).

Generates a hidden input from the hidden seed, times the reference (the slow original) and
the submission on it, checks the submission's correlation matrix against numpy's, and scores 1 when it
is correct and at least 4 times faster. The submission runs as this grader's uid in its
sandbox, so it is kept from the score: it gets a clean environment and a scratch directory,
and every process it leaves is killed (kill(-1) in this PID namespace) before the score file
is written; the score is written last, by this process only.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

# Sixteen columns: the original does rows × columns² work in Python, so a vectorised answer is
# far past the 4× bar even with its interpreter and numpy start-up in the time.
ROWS, COLUMNS = 200_000, 16
SPEEDUP = 4.0
TIMEOUT_S = 60


def kill_others() -> None:
    """Kill every other process of this PID namespace that this uid can signal."""
    for _ in range(20):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def timed(script: str, source: str, target: str, scratch: str) -> tuple[float, int, str]:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-I", script, source, target],
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT_S,
            start_new_session=True,
        )
        code, err = done.returncode, done.stderr[-2000:].decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        code, err = -1, "timed out"
    elapsed = time.perf_counter() - started
    kill_others()
    return elapsed, code, err


def read_output(path: str) -> "np.ndarray | None":
    try:
        return np.loadtxt(path, delimiter=",", ndmin=2)
    except Exception:
        return None


def main() -> None:
    # kill(-1) below kills every process this uid may signal: only ever as the grader's own
    # unprivileged uid in its own PID namespace, never as root on a host.
    if os.getuid() == 0 or os.getpid() > 1000:
        raise SystemExit("grade.py runs only as Karotte's grader (an unprivileged uid in its own PID namespace)")
    score_file = os.environ["KAROTTE_SCORE_FILE"]
    submission = os.path.join(os.environ["KAROTTE_SUBMISSION_DIR"], "correlate.py")
    seed = int(open(os.path.join(os.environ["KAROTTE_HIDDEN_DIR"], "seed.txt")).read().strip())
    rng = np.random.default_rng(seed)
    matrix = rng.normal(rng.uniform(-50, 50, COLUMNS), rng.uniform(0.5, 20, COLUMNS), (ROWS, COLUMNS))
    matrix[:, 1] = matrix[:, 0] * 0.5 + rng.normal(0, 1, ROWS)  # correlated columns
    matrix[:, COLUMNS - 1] = 3.25  # a constant column: no deviation
    metadata: dict = {}
    score = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o700)
        source = os.path.join(scratch, "input.csv")
        np.savetxt(source, matrix, delimiter=",", fmt="%.6f")
        matrix = np.loadtxt(source, delimiter=",")
        centered = matrix - matrix.mean(axis=0)
        covariance = centered.T @ centered / ROWS
        deviation = np.sqrt(np.diag(covariance))
        scale = np.outer(deviation, deviation)
        expected = np.where(scale == 0, 0.0, covariance / np.where(scale == 0, 1, scale))
        reference_s, reference_code, _ = timed(os.path.join(os.getcwd(), "reference.py"), source, os.path.join(scratch, "ref.csv"), scratch)
        metadata["referenceSeconds"] = round(reference_s, 3)
        if not os.path.isfile(submission):
            metadata["reason"] = "no correlate.py was submitted"
        else:
            target = os.path.join(scratch, "out.csv")
            # The faster of two runs: one slow start on a busy host does not fail an honest answer.
            elapsed, code, err = timed(submission, source, target, scratch)
            if code == 0:
                again, code, err = timed(submission, source, target, scratch)
                elapsed = min(elapsed, again)
            metadata["submissionSeconds"] = round(elapsed, 3)
            output = read_output(target) if code == 0 else None
            correct = output is not None and output.shape == expected.shape and bool(np.allclose(output, expected, atol=2e-6))
            metadata["correct"] = correct
            if code != 0:
                metadata["reason"] = f"correlate.py exited {code}: {err}"
            elif not correct:
                metadata["reason"] = "the output differs from the original's"
            elif elapsed * SPEEDUP > reference_s:
                metadata["reason"] = f"correct but only {reference_s / elapsed:.1f}x faster (needs {SPEEDUP}x)"
            else:
                score = 1.0
            metadata["speedup"] = round(reference_s / elapsed, 2) if elapsed > 0 else None
        if reference_code != 0:
            raise SystemExit("the reference failed: the grader is broken")
    kill_others()
    with open(score_file, "w") as f:
        json.dump({"score": score, "metadata": metadata}, f)


if __name__ == "__main__":
    main()

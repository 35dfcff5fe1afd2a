"""The grader (contract section 4): it runs after the student is gone, in its own sandbox, and
reads only copies. Replace the comparison with your task's own check."""
import json
import os


def read(directory, name):
    path = os.path.join(directory, name)
    # A missing submission is the student's failure (score 0), not the grader's.
    if not os.path.isfile(path) or os.path.getsize(path) > 1024 * 1024:
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().strip()


answer = read(os.environ["KAROTTE_SUBMISSION_DIR"], "answer.txt")
expected = read(os.environ["KAROTTE_HIDDEN_DIR"], "answer.txt")
score = 1 if answer is not None and answer == expected else 0
with open(os.environ["KAROTTE_SCORE_FILE"], "w") as f:
    json.dump({"score": score, "metadata": {"submitted": answer is not None}}, f)

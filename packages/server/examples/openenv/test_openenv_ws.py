"""The standard-library OpenEnv client against a live `karotte serve` (KAROTTE_OPENENV_URL).

Run by apps/karotte/test/openenv-python.integration.test.ts; skipped without the variable unless
KAROTTE_REQUIRE_LIVE=1 (then it fails instead).
"""

from __future__ import annotations

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openenv_ws import OpenEnvClient, OpenEnvError  # noqa: E402

URL = os.environ.get("KAROTTE_OPENENV_URL", "")
if not URL and os.environ.get("KAROTTE_REQUIRE_LIVE") == "1":
    raise SystemExit("KAROTTE_OPENENV_URL is required")


@unittest.skipUnless(URL, "needs a live karotte serve (KAROTTE_OPENENV_URL)")
class OpenEnvClientTest(unittest.TestCase):
    def test_a_bad_token_is_refused_before_the_upgrade(self) -> None:
        bad = URL.rsplit("/", 1)[0] + "/not-the-token"
        with self.assertRaisesRegex(ConnectionError, "HTTP 401"):
            OpenEnvClient(bad)

    def test_seeds_are_honoured(self) -> None:
        with OpenEnvClient(URL) as a, OpenEnvClient(URL) as b:
            one = a.reset(taskId="roman-numerals", seed=5).observation["metadata"]
            two = b.reset(taskId="roman-numerals", seed=5).observation["metadata"]
            self.assertEqual(one["worldFingerprint"], two["worldFingerprint"])
            self.assertEqual(one["seed"], 5)
            other = b.reset(taskId="roman-numerals", seed=6).observation["metadata"]
            self.assertNotEqual(other["worldFingerprint"], one["worldFingerprint"])
            self.assertEqual(b.state()["episode_id"], other["episodeId"])

    def test_errors_carry_openenv_codes_and_the_connection_goes_on(self) -> None:
        with OpenEnvClient(URL) as env:
            with self.assertRaises(OpenEnvError) as caught:
                env.reset(taskId="roman-numerals", sede=1)
            self.assertEqual((caught.exception.code, caught.exception.field), ("VALIDATION_ERROR", "data.sede"))
            with self.assertRaises(OpenEnvError) as caught:
                env.step({"message": {"role": "assistant", "content": "x"}})
            self.assertEqual(caught.exception.code, "EXECUTION_ERROR")
            first = env.reset(taskId="quarterly-revenue")
            self.assertEqual([m["role"] for m in first.observation["messages"]], ["system", "user"])
            self.assertIsNone(first.reward)
            self.assertFalse(first.done)
            answer = env.step({"type": "call_tool", "tool_name": "bash", "arguments": {"command": "echo hi"}})
            self.assertTrue(answer.observation["toolMessages"][0]["content"].startswith("hi\n"))
            self.assertEqual(env.state()["step_count"], 1)


if __name__ == "__main__":
    unittest.main()

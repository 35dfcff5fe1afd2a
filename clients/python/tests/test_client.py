"""Tests of the Python client.

The first class runs everywhere (a stub server of the standard library). The second drives a
live ``karotte serve``: it needs ``KAROTTE_URL`` and ``KAROTTE_TOKEN`` (the project's integration
test ``apps/karotte/test/serve-python.integration.test.ts`` starts the server and sets them, with
``KAROTTE_EXAMPLES``, ``KAROTTE_MAX_EPISODES``, ``KAROTTE_TASK_IDS`` (the served ids, in order),
``KAROTTE_SMALL_TASK`` (a task whose sandboxes fit ``KAROTTE_MAX_EPISODES`` at once: the group and
the capacity test use it), ``KAROTTE_GROUP_SIZE`` and ``KAROTTE_ATTACKS`` (a JSON file of the
red-team catalog's attacks to replay, ``[{"id", "messages"}]``). Without the first two it is
skipped with that reason, unless ``KAROTTE_REQUIRE_LIVE=1``, when their absence is a failure.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import unittest
from pathlib import Path
from typing import Any

from karotte_client import KarotteClient, KarotteRequestError


class _Stub(http.server.BaseHTTPRequestHandler):
    replies: list[tuple[int, dict[str, str], Any]] = []
    seen: list[dict[str, Any]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        type(self).seen.append(
            {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        status, headers, payload = type(self).replies.pop(0)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer
    do_POST = _answer
    do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class ClientAgainstStub(unittest.TestCase):
    def setUp(self) -> None:
        _Stub.replies = []
        _Stub.seen = []
        self.server, self.url = _serve(_Stub)

    def tearDown(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def test_retries_503_after_retry_after_then_succeeds(self) -> None:
        created = {"episodeId": "ep_1", "groupId": None, "taskId": "t", "seed": 3, "worldFingerprint": "sha256:ab",
                   "messages": [{"role": "system", "content": "x"}], "tools": []}
        _Stub.replies = [(503, {"Retry-After": "2"}, {"error": {"code": "AT_CAPACITY", "message": "full"}})] * 2 + [
            (201, {}, created)
        ]
        waits: list[float] = []
        client = KarotteClient(self.url, "tok", sleep=waits.append)
        episode = client.create_episode("t", seed=3)
        self.assertEqual(episode.episode_id, "ep_1")
        self.assertEqual(waits, [2.0, 2.0])
        self.assertEqual([s["auth"] for s in _Stub.seen], ["Bearer tok"] * 3)
        self.assertEqual(json.loads(_Stub.seen[0]["body"]), {"taskId": "t", "seed": 3})

    def test_gives_up_after_max_retries_with_the_servers_error(self) -> None:
        _Stub.replies = [(503, {"Retry-After": "1"}, {"error": {"code": "AT_CAPACITY", "message": "full"}})] * 2
        client = KarotteClient(self.url, "tok", max_retries=1, sleep=lambda s: None)
        with self.assertRaises(KarotteRequestError) as caught:
            client.create_episode("t")
        self.assertEqual((caught.exception.status, caught.exception.code), (503, "AT_CAPACITY"))

    def test_a_400_names_the_field(self) -> None:
        _Stub.replies = [(400, {}, {"error": {"code": "INVALID_REQUEST", "message": "sneaky: unknown", "field": "sneaky"}})]
        with self.assertRaises(KarotteRequestError) as caught:
            KarotteClient(self.url, "tok").tasks()
        self.assertEqual(caught.exception.field, "sneaky")

    def test_refuses_a_bad_base_url_and_an_empty_token(self) -> None:
        with self.assertRaises(ValueError):
            KarotteClient("ftp://x", "tok")
        with self.assertRaises(ValueError):
            KarotteClient(self.url, "")


LIVE_URL = os.environ.get("KAROTTE_URL")
LIVE_TOKEN = os.environ.get("KAROTTE_TOKEN")
REQUIRE_LIVE = os.environ.get("KAROTTE_REQUIRE_LIVE") == "1"
EXAMPLES = Path(os.environ.get("KAROTTE_EXAMPLES", "apps/karotte/examples"))
TASK_IDS = os.environ.get("KAROTTE_TASK_IDS", "quarterly-revenue,roman-numerals").split(",")
SMALL_TASK = os.environ.get("KAROTTE_SMALL_TASK", "quarterly-revenue")
ATTACKS = os.environ.get("KAROTTE_ATTACKS")


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}


class _ScriptedModel(http.server.BaseHTTPRequestHandler):
    """A chat-completions endpoint answering a fixed script, with token ids (vLLM's return_token_ids)."""

    script: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        reply = type(self).script.pop(0)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if "command" in reply:
            message["tool_calls"] = [{"id": f"call_{len(type(self).requests)}", "type": "function",
                                      "function": {"name": "bash", "arguments": json.dumps({"command": reply["command"]})}}]
        data = json.dumps({
            "id": "cmpl", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "command" in reply else "stop",
                         "token_ids": reply["tokens"]}],
            "prompt_token_ids": [1, 2, 3],
            "usage": {"prompt_tokens": 3, "completion_tokens": len(reply["tokens"]), "total_tokens": 3 + len(reply["tokens"])},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return


@unittest.skipIf(not (LIVE_URL and LIVE_TOKEN) and not REQUIRE_LIVE,
                 "no live server: set KAROTTE_URL and KAROTTE_TOKEN (the project's integration test does)")
class ClientAgainstLiveServer(unittest.TestCase):
    client: KarotteClient

    @classmethod
    def setUpClass(cls) -> None:
        if not (LIVE_URL and LIVE_TOKEN):
            raise AssertionError("KAROTTE_REQUIRE_LIVE=1 but KAROTTE_URL or KAROTTE_TOKEN is not set")
        cls.client = KarotteClient(LIVE_URL, LIVE_TOKEN, max_retry_delay_s=2.0)

    def _solve(self, task_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        episode = self.client.create_episode(task_id)
        for index, message in enumerate(messages):
            if self.client.turn(episode.episode_id, message, turn_id=f"t{index}").done:
                break
        return self.client.finish(episode.episode_id)

    def test_lists_the_tasks(self) -> None:
        ids = [t["id"] for t in self.client.tasks()]
        self.assertEqual(ids, TASK_IDS)
        self.assertEqual(self.client.capabilities()["protocol"], "karotte-env/1")

    def test_both_examples_solved_by_their_control_replays(self) -> None:
        for task_id in ("quarterly-revenue", "roman-numerals"):
            with self.subTest(task_id):
                control = json.loads((EXAMPLES / task_id / "control.json").read_text())
                result = self._solve(task_id, control)
                self.assertEqual((result["status"], result["reward"], result["blame"], result["trainable"]),
                                 ("passed", 1, "none", True))
                step = result["attestation"]["steps"][0]
                self.assertRegex(step["submissionSha256"], r"^sha256:[0-9a-f]{64}$")
                self.assertTrue(step["reaper"]["confirmed"])
                self.assertEqual(step["grader"]["exitCode"], 0)
                self.assertEqual(result["attestation"]["network"], {"checked": True, "isolated": True})

    def test_a_wrong_answer_fails(self) -> None:
        result = self._solve("quarterly-revenue", [_bash("c0", "echo 1 > answer.txt"), {"role": "assistant", "content": "done"}])
        self.assertEqual((result["status"], result["reward"], result["blame"]), ("failed", 0, "none"))

    def test_a_group_has_one_fingerprint(self) -> None:
        size = int(os.environ.get("KAROTTE_GROUP_SIZE", "0")) or min(4, int(os.environ.get("KAROTTE_MAX_EPISODES", "2")))
        group = self.client.create_group(SMALL_TASK, size, seed=99)
        self.assertEqual(len(group.episodes), size)
        self.assertEqual(len({e.episode_id for e in group.episodes}), size)
        self.assertEqual({e.world_fingerprint for e in group.episodes}, {group.world_fingerprint})
        results = [self.client.finish(episode.episode_id) for episode in group.episodes]
        self.assertEqual({r["worldFingerprint"] for r in results}, {group.world_fingerprint})
        self.assertEqual(len({r["sandbox"]["uid"] for r in results}), size)
        other = self.client.create_episode(SMALL_TASK, seed=100)
        self.assertNotEqual(other.world_fingerprint, group.world_fingerprint)
        self.client.cancel(other.episode_id)

    def test_the_catalog_attacks_score_zero_through_the_protocol(self) -> None:
        if not ATTACKS:
            self.skipTest("no KAROTTE_ATTACKS file (the project's integration test writes one from the catalog)")
        attacks = json.loads(Path(ATTACKS).read_text())
        self.assertGreaterEqual(len(attacks), 10)
        for attack in attacks:
            with self.subTest(attack["id"]):
                result = self._solve("quarterly-revenue", attack["messages"])
                self.assertNotEqual(result["status"], "error", result.get("error"))
                self.assertEqual((result["score"], result["reward"]), (0, 0))
                self.assertNotEqual(result["blame"], "infra")

    def test_exactly_once_turns_and_409s(self) -> None:
        episode = self.client.create_episode("quarterly-revenue")
        message = _bash("c0", "echo once >> count.txt; wc -l < count.txt")
        first = self.client.turn(episode.episode_id, message, turn_id="a")
        again = KarotteClient(LIVE_URL or "", LIVE_TOKEN or "").turn(episode.episode_id, message, turn_id="a")
        self.assertEqual(first, again)
        check = self.client.turn(episode.episode_id, _bash("c1", "wc -l < count.txt"), turn_id="b")
        self.assertTrue(str(check.tool_messages[0]["content"]).startswith("1\n"))
        with self.assertRaises(KarotteRequestError) as conflict:
            self.client.turn(episode.episode_id, _bash("c2", "echo other"), turn_id="a")
        self.assertEqual((conflict.exception.status, conflict.exception.code), (409, "TURN_CONFLICT"))
        self.client.finish(episode.episode_id)
        with self.assertRaises(KarotteRequestError) as after:
            self.client.turn(episode.episode_id, _bash("c3", "true"), turn_id="z")
        self.assertEqual(after.exception.code, "EPISODE_FINISHED")
        self.assertEqual(self.client.stored_turn(episode.episode_id, "a"), first)
        with self.assertRaises(KarotteRequestError) as unknown:
            self.client.finish("ep_no_such_episode")
        self.assertEqual(unknown.exception.status, 404)

    def test_the_event_stream_resumes_by_sequence_number(self) -> None:
        episode = self.client.create_episode("quarterly-revenue")
        self.client.turn(episode.episode_id, _bash("c0", "true"), turn_id="t0")
        self.client.turn(episode.episode_id, {"role": "assistant", "content": "done"}, turn_id="t1")
        self.client.finish(episode.episode_id)
        events = list(self.client.events(episode.episode_id))
        self.assertEqual([e.seq for e in events], list(range(len(events))))
        self.assertEqual(events[-1].type, "episode_finished")
        self.assertIn("sandbox_ready", [e.type for e in events])
        self.assertEqual(list(self.client.events(episode.episode_id, from_seq=3)), events[3:])

    def test_run_mode_returns_the_rollout_with_token_data(self) -> None:
        control = json.loads((EXAMPLES / "quarterly-revenue" / "control.json").read_text())
        commands = [json.loads(c["function"]["arguments"])["command"] for m in control for c in m.get("tool_calls") or []]
        _ScriptedModel.script = [{"command": c, "content": None, "tokens": [10 + i]} for i, c in enumerate(commands)]
        _ScriptedModel.script.append({"content": "The total is in answer.txt.", "tokens": [99]})
        _ScriptedModel.requests = []
        model, url = _serve(_ScriptedModel)
        try:
            episode = self.client.create_episode("quarterly-revenue")
            rollout = self.client.run(episode.episode_id, base_url=url + "/v1", model="scripted",
                                      api_key_env="KAROTTE_TEST_KEY", extra_body={"return_token_ids": True})
        finally:
            model.shutdown()
            model.server_close()
        self.assertEqual(rollout["result"]["status"], "passed")
        self.assertEqual([t["tokens"]["completionIds"] for t in rollout["turns"]], [[10 + i] for i in range(len(commands))] + [[99]])
        self.assertEqual(rollout["turns"][0]["tokens"]["promptIds"], [1, 2, 3])
        self.assertEqual(_ScriptedModel.requests[0]["path"], "/v1/chat/completions")
        self.assertEqual(_ScriptedModel.requests[0]["auth"], "Bearer scripted-key")

    def test_at_capacity_the_client_waits_and_retries(self) -> None:
        capacity = int(os.environ.get("KAROTTE_MAX_EPISODES", "2"))
        held = [self.client.create_episode(SMALL_TASK) for _ in range(capacity)]
        waits: list[float] = []
        retrying = KarotteClient(LIVE_URL or "", LIVE_TOKEN or "", sleep=lambda s: (waits.append(s), _sleep(s))[1])
        timer = threading.Timer(1.5, lambda: self.client.finish(held[0].episode_id))
        timer.start()
        try:
            extra = retrying.create_episode(SMALL_TASK)
        finally:
            timer.join()
        self.assertGreater(len(waits), 0)
        for episode in [*held[1:], extra]:
            self.client.cancel(episode.episode_id)


def _sleep(seconds: float) -> None:
    threading.Event().wait(seconds)



if __name__ == "__main__":
    unittest.main()

"""The client: one method per route of the protocol (``/v1``), JSON over HTTP or a unix socket."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

JsonObject = dict[str, Any]


class KarotteRequestError(Exception):
    """An answer that is not 2xx: the protocol's error body (``code``, ``message``, ``field``) and the status."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field


@dataclass(frozen=True)
class CreatedEpisode:
    """What ``POST /v1/episodes`` answers (and each member of a group)."""

    episode_id: str
    group_id: Optional[str]
    task_id: str
    seed: int
    world_fingerprint: str
    messages: list[JsonObject]
    tools: list[JsonObject]

    @staticmethod
    def from_json(body: Mapping[str, Any]) -> "CreatedEpisode":
        return CreatedEpisode(
            episode_id=body["episodeId"],
            group_id=body.get("groupId"),
            task_id=body["taskId"],
            seed=body["seed"],
            world_fingerprint=body["worldFingerprint"],
            messages=list(body["messages"]),
            tools=list(body["tools"]),
        )


@dataclass(frozen=True)
class CreatedGroup:
    """What ``POST /v1/groups`` answers: every member built from one seed, with one fingerprint."""

    group_id: str
    world_fingerprint: str
    episodes: list[CreatedEpisode]


@dataclass(frozen=True)
class TurnAnswer:
    """The answer to one turn: the tool messages to append, and whether the episode is done."""

    turn_id: str
    turn_index: int
    tool_messages: list[JsonObject]
    step_ended: bool
    done: bool
    next_messages: list[JsonObject] = field(default_factory=list)
    stop_reason: Optional[str] = None

    @staticmethod
    def from_json(body: Mapping[str, Any]) -> "TurnAnswer":
        return TurnAnswer(
            turn_id=body["turnId"],
            turn_index=body["turnIndex"],
            tool_messages=list(body["toolMessages"]),
            step_ended=body["stepEnded"],
            done=body["done"],
            next_messages=list(body.get("nextMessages", [])),
            stop_reason=body.get("stopReason"),
        )


@dataclass(frozen=True)
class Event:
    """One event of an episode's stream (``seq`` from 0, resumable)."""

    seq: int
    time: str
    type: str
    data: JsonObject


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class KarotteClient:
    """A client of one ``karotte serve`` server.

    ``base_url`` is ``http://127.0.0.1:<port>``, or ``unix:/path/to/socket``. Every request carries
    the bearer token. A 503 (at capacity) is retried up to ``max_retries`` times, each after its
    ``Retry-After`` (capped at ``max_retry_delay_s``).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 600.0,
        max_retries: int = 30,
        max_retry_delay_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token:
            raise ValueError("token must not be empty")
        self._token = token
        self._timeout = timeout_s
        self.max_retries = max_retries
        self.max_retry_delay_s = max_retry_delay_s
        self._sleep = sleep
        if base_url.startswith("unix:"):
            self._socket: Optional[str] = base_url[len("unix:") :]
            self._host = "localhost"
            self._port = 0
        else:
            parsed = urllib.parse.urlsplit(base_url)
            if parsed.scheme != "http" or parsed.hostname is None:
                raise ValueError(f"base_url must be http://host:port or unix:/path (got {base_url!r})")
            self._socket = None
            self._host = parsed.hostname
            self._port = parsed.port or 80

    # -- plumbing -----------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        if self._socket is not None:
            return _UnixConnection(self._socket, self._timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def request(self, method: str, path: str, body: Optional[Any] = None) -> tuple[int, Mapping[str, str], Any]:
        """One raw request (no retry): status, headers and the parsed JSON body (None when empty)."""
        conn = self._connection()
        try:
            data = None if body is None else json.dumps(body).encode("utf-8")
            headers = {"Authorization": f"Bearer {self._token}"}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            parsed: Any = None
            if raw:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = raw.decode("utf-8", "replace")
            return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
        finally:
            conn.close()

    def _call(self, method: str, path: str, body: Optional[Any] = None) -> Any:
        attempt = 0
        while True:
            status, headers, parsed = self.request(method, path, body)
            if status == 503 and attempt < self.max_retries:
                attempt += 1
                try:
                    wait = float(headers.get("retry-after", "1"))
                except ValueError:
                    wait = 1.0
                self._sleep(min(self.max_retry_delay_s, max(0.0, wait)))
                continue
            if 200 <= status < 300:
                return parsed
            error = parsed.get("error", {}) if isinstance(parsed, dict) else {}
            raise KarotteRequestError(
                status, str(error.get("code", "HTTP_ERROR")), str(error.get("message", parsed)), error.get("field")
            )

    @staticmethod
    def _episode(episode_id: str) -> str:
        return "/v1/episodes/" + urllib.parse.quote(episode_id, safe="")

    # -- the protocol -------------------------------------------------------------------------

    def capabilities(self) -> JsonObject:
        return self._call("GET", "/v1/capabilities")

    def tasks(self) -> list[JsonObject]:
        """The tasks served: ``[{"id": ..., "steps": ...}]`` (no grader data)."""
        return list(self._call("GET", "/v1/tasks")["tasks"])

    def create_episode(
        self, task_id: str, *, seed: Optional[int] = None, tool_profile: Optional[str] = None, max_turns: Optional[int] = None
    ) -> CreatedEpisode:
        """Create an episode: its sandbox is built, its first messages and tools returned."""
        body = self._create_body(task_id, seed, tool_profile, max_turns)
        return CreatedEpisode.from_json(self._call("POST", "/v1/episodes", body))

    def create_group(
        self,
        task_id: str,
        size: int,
        *,
        seed: Optional[int] = None,
        tool_profile: Optional[str] = None,
        max_turns: Optional[int] = None,
    ) -> CreatedGroup:
        """Create ``size`` episodes of one task from one seed (GRPO); their fingerprints are equal."""
        body = self._create_body(task_id, seed, tool_profile, max_turns)
        body["size"] = size
        answer = self._call("POST", "/v1/groups", body)
        return CreatedGroup(
            group_id=answer["groupId"],
            world_fingerprint=answer["worldFingerprint"],
            episodes=[CreatedEpisode.from_json(e) for e in answer["episodes"]],
        )

    @staticmethod
    def _create_body(task_id: str, seed: Optional[int], tool_profile: Optional[str], max_turns: Optional[int]) -> JsonObject:
        body: JsonObject = {"taskId": task_id}
        if seed is not None:
            body["seed"] = seed
        if tool_profile is not None:
            body["toolProfile"] = tool_profile
        if max_turns is not None:
            body["maxTurns"] = max_turns
        return body

    def turn(
        self,
        episode_id: str,
        message: Mapping[str, Any],
        *,
        turn_id: str,
        tokens: Optional[Mapping[str, Sequence[float]]] = None,
        policy_version: Optional[str] = None,
    ) -> TurnAnswer:
        """Send one assistant message; its tool calls run as the student, exactly once per ``turn_id``.

        Sending the same ``turn_id`` again (after a timeout, from a new process) returns the stored
        answer and runs nothing; another message under the same ``turn_id`` is a 409.
        """
        body: JsonObject = {"turnId": turn_id, "message": dict(message)}
        if tokens is not None:
            body["tokens"] = {k: list(v) for k, v in tokens.items()}
        if policy_version is not None:
            body["policyVersion"] = policy_version
        return TurnAnswer.from_json(self._call("POST", self._episode(episode_id) + "/turns", body))

    def stored_turn(self, episode_id: str, turn_id: str) -> TurnAnswer:
        """The stored answer of a turn sent before (waits for one still running)."""
        path = self._episode(episode_id) + "/turns/" + urllib.parse.quote(turn_id, safe="")
        return TurnAnswer.from_json(self._call("GET", path))

    def finish(self, episode_id: str) -> JsonObject:
        """Collect, grade, tear down; the result with ``reward``, ``blame``, ``trainable`` and ``attestation``."""
        return self._call("POST", self._episode(episode_id) + "/finish", {})

    def cancel(self, episode_id: str) -> None:
        """Cancel the episode and tear it down."""
        self._call("DELETE", self._episode(episode_id))

    def run(
        self,
        episode_id: str,
        *,
        base_url: str,
        model: str,
        api_key_env: Optional[str] = None,
        sampling: Optional[Mapping[str, Any]] = None,
        extra_body: Optional[Mapping[str, Any]] = None,
    ) -> JsonObject:
        """Run mode: Karotte drives the model behind ``base_url`` itself; returns the finished rollout
        (``result``, ``messages``, ``turns`` with token data when the endpoint returns it)."""
        agent: JsonObject = {"kind": "openai-compatible", "baseUrl": base_url, "model": model}
        if api_key_env is not None:
            agent["apiKeyEnv"] = api_key_env
        if sampling is not None:
            agent["sampling"] = dict(sampling)
        if extra_body is not None:
            agent["extraBody"] = dict(extra_body)
        return self._call("POST", self._episode(episode_id) + "/run", {"agent": agent})

    def events(self, episode_id: str, *, from_seq: int = 0) -> Iterator[Event]:
        """The episode's events from ``from_seq`` on, until the episode is finished (server-sent events)."""
        conn = self._connection()
        try:
            conn.request(
                "GET",
                f"{self._episode(episode_id)}/events?from={int(from_seq)}",
                headers={"Authorization": f"Bearer {self._token}", "Accept": "text/event-stream"},
            )
            response = conn.getresponse()
            if response.status != 200:
                raw = response.read()
                try:
                    error = json.loads(raw).get("error", {})
                except ValueError:
                    error = {}
                raise KarotteRequestError(response.status, error.get("code", "HTTP_ERROR"), error.get("message", ""), error.get("field"))
            numbered = False
            data: list[str] = []
            while True:
                line = response.readline()
                if not line:
                    return
                text = line.decode("utf-8").rstrip("\r\n")
                if text == "":
                    if numbered and data:
                        body = json.loads("\n".join(data))
                        yield Event(seq=body["seq"], time=body["time"], type=body["type"], data=body["data"])
                    numbered = False
                    data = []
                elif text.startswith("id: "):
                    numbered = True
                elif text.startswith("data: "):
                    data.append(text[len("data: ") :])
        finally:
            conn.close()

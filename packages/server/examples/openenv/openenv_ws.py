"""A client of OpenEnv's WebSocket protocol in the Python standard library only.

Written from OpenEnv's own client (meta-pytorch/OpenEnv ``src/openenv/core/env_client.py`` and
``generic_client.py``): the base URL's ``http://`` becomes ``ws://`` and ``/ws`` is appended;
``reset(**kwargs)`` sends ``{"type": "reset", "data": kwargs}``, ``step(action)`` sends
``{"type": "step", "data": action}``, ``state()`` sends ``{"type": "state"}``; each reads the next
frame, raises on ``{"type": "error"}`` and returns ``StepResult(observation, reward, done)`` from
``data``; ``close()`` sends ``{"type": "close"}`` and closes the socket. OpenEnv's own client
needs ``websockets>=13`` (``websockets.asyncio``), which is not in the standard library.

The WebSocket part is RFC 6455 for a client: the opening handshake with its accept key checked,
masked text frames out, unmasked frames in (fragmented messages joined, pings answered, a close
answered), and a bound on the size of a message read.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, Optional

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class OpenEnvError(RuntimeError):
    """An error frame of the server: ``code`` is OpenEnv's (VALIDATION_ERROR, ...)."""

    def __init__(self, data: Dict[str, Any]):
        self.code = str(data.get("code", "UNKNOWN"))
        self.reason = data.get("reason")
        self.field = data.get("field")
        super().__init__(f"Server error: {data.get('message', 'Unknown error')} (code: {self.code})")


class ConnectionClosed(ConnectionError):
    def __init__(self, code: Optional[int]):
        self.code = code
        super().__init__(f"the WebSocket was closed (code {code})")


@dataclass
class StepResult:
    observation: Dict[str, Any]
    reward: Optional[float] = None
    done: bool = False


class WebSocket:
    """One client WebSocket connection (text messages only)."""

    def __init__(self, url: str, timeout_s: float = 60.0, max_message_bytes: int = 100 * 1024 * 1024):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "ws":
            raise ValueError(f"only ws:// URLs: {url}")
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        path = parts.path or "/"
        self.max_message_bytes = max_message_bytes
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the server closed the connection during the handshake")
            head += chunk
            if len(head) > 65536:
                raise ConnectionError("the handshake answer is too long")
        head, self._buffer = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        if status != 101:
            raise ConnectionError(f"the upgrade was refused: HTTP {status}")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        expected = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != expected:
            raise ConnectionError("the server's Sec-WebSocket-Accept is wrong")
        self.close_code: Optional[int] = None

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionClosed(self.close_code or 1006)
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send_text(self, text: str) -> None:
        self._send_frame(0x1, text.encode("utf-8"))

    def recv_text(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
            if b1 & 0x80:
                raise ConnectionError("the server masked a frame")
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            if len(message) + n > self.max_message_bytes:
                raise ConnectionError(f"a message larger than {self.max_message_bytes} bytes")
            payload = self._read(n)
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:  # pong
                continue
            if opcode == 0x8:  # close
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                try:
                    self._send_frame(0x8, payload[:2])
                except OSError:
                    pass
                raise ConnectionClosed(self.close_code)
            message += payload
            if fin:
                return message.decode("utf-8")

    def close(self, code: int = 1000) -> int:
        """Send a close frame, wait (bounded) for the server's, close the socket; the code."""
        try:
            self._send_frame(0x8, struct.pack("!H", code))
            while True:
                self.recv_text()
        except (ConnectionClosed, OSError) as closed:
            if isinstance(closed, ConnectionClosed):
                self.close_code = closed.code
        finally:
            self.sock.close()
        return self.close_code or 1006


class OpenEnvClient:
    """OpenEnv's ``GenericEnvClient(...).sync()`` API over :class:`WebSocket`."""

    def __init__(self, base_url: str, message_timeout_s: float = 600.0):
        url = base_url.rstrip("/")
        if url.startswith("http://"):
            url = "ws://" + url[len("http://"):]
        self._ws = WebSocket(f"{url}/ws", timeout_s=message_timeout_s)

    def _send_and_receive(self, message: Dict[str, Any]) -> Dict[str, Any]:
        self._ws.send_text(json.dumps(message))
        response = json.loads(self._ws.recv_text())
        if response.get("type") == "error":
            raise OpenEnvError(response.get("data", {}))
        return response

    def reset(self, **kwargs: Any) -> StepResult:
        data = self._send_and_receive({"type": "reset", "data": kwargs}).get("data", {})
        return StepResult(data.get("observation", {}), data.get("reward"), data.get("done", False))

    def step(self, action: Dict[str, Any]) -> StepResult:
        data = self._send_and_receive({"type": "step", "data": action}).get("data", {})
        return StepResult(data.get("observation", {}), data.get("reward"), data.get("done", False))

    def state(self) -> Dict[str, Any]:
        return self._send_and_receive({"type": "state"}).get("data", {})

    def close(self) -> int:
        """OpenEnv's disconnect(): the protocol's close frame, then the socket's close."""
        try:
            self._ws.send_text(json.dumps({"type": "close"}))
        except OSError:
            pass
        return self._ws.close()

    def __enter__(self) -> "OpenEnvClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

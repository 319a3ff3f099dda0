"""The real `web` and `worker` commands as subprocesses, wired to Redis and the local fakes.

Tests, benchmarks and the sandbox start the product through this, so all three exercise the
same commands a deployment runs (the Procfile's).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from agent.tools.sandbox import descendants
from gateway.sandbox.fake_slack import APP_TOKEN
from gateway.sandbox.ports import free_port
from gateway.sandbox.signing import event_request, form_request, interaction_request

BOT_TOKEN = "xoxb-sandbox-token"
SIGNING_SECRET = "sandbox-signing-secret"
READY_TIMEOUT_S = 20
THREADLINE = shutil.which("threadline", path=str(Path(sys.executable).parent)) or "threadline"
# The checkout this module belongs to: its subprocesses must run the same code as the caller,
# not whatever checkout the `threadline` script was installed from (an editable install).
SOURCE_ROOT = Path(__file__).resolve().parents[2]


class Stack:
    def __init__(
        self,
        tmp_path: Path,
        redis_url: str,
        slack_api_url: str,
        llm_base_url: str,
        *,
        source_root: Path = SOURCE_ROOT,
        **env: str,
    ) -> None:
        self.port = free_port()
        # Also the processes' working directory: `python -m` and `-c` (the children a supervisor
        # starts, in older checkouts) put it first on the path, ahead of PYTHONPATH.
        self.source_root = source_root
        self.logs = tmp_path / "logs"
        self.logs.mkdir(exist_ok=True)
        self.env = {
            **os.environ,
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack_api_url,
            "REDIS_URL": redis_url,
            "PORT": str(self.port),
            "LLM_BASE_URL": llm_base_url,
            "LLM_MODEL": "fake-model",
            "LLM_API_KEY": "sk-test",
            "AGENT_WORKDIR": str(tmp_path / "workspaces"),
            "WEB_CONCURRENCY": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(source_root), os.environ.get("PYTHONPATH")])),
            **env,
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        # A fresh connection per request: reusing one that gunicorn is closing as idle (after its
        # 2 s keep-alive) loses the request to a reset, a race a loaded machine makes likely.
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            timeout=10,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    def start(self, *, workers: int = 1, socket_mode: Any = None) -> Stack:
        """Start web and workers; with `socket_mode` (a FakeSocketMode), web dials out to it."""
        if socket_mode is None:
            self.spawn("web", [THREADLINE, "web"])
        else:
            self.env.setdefault("SLACK_APP_TOKEN", APP_TOKEN)
            self.spawn("web", [THREADLINE, "web", "--socket"])
        for index in range(workers):
            self.spawn(f"worker{index}", [THREADLINE, "worker"])
        if socket_mode is not None:
            socket_mode.wait_connected(READY_TIMEOUT_S)
            return self
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._web_ready():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"web did not answer /healthz within {READY_TIMEOUT_S}s:\n{self.log('web')}"
                )
            time.sleep(0.05)
        return self

    def spawn(self, name: str, command: list[str], **env: str) -> subprocess.Popen[bytes]:
        """Start `command` with the stack's environment, and `env` for this process alone."""
        log = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command,
            env={**self.env, **env},
            cwd=self.source_root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def _web_ready(self) -> bool:
        if self.processes["web"].poll() is not None:
            raise AssertionError(f"web exited early:\n{self.log('web')}")
        try:
            return self.client.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def send_event(
        self, payload: dict[str, Any], headers: dict[str, str] | None = None, **sign: Any
    ) -> httpx.Response:
        body, signed = event_request(SIGNING_SECRET, payload, **sign)
        return self.client.post("/slack/events", content=body, headers={**signed, **(headers or {})})

    def send_command(self, fields: dict[str, str], **sign: Any) -> httpx.Response:
        body, signed = form_request(SIGNING_SECRET, fields, **sign)
        return self.client.post("/slack/events", content=body, headers=signed)

    def send_interaction(self, payload: dict[str, Any], **sign: Any) -> httpx.Response:
        body, signed = interaction_request(SIGNING_SECRET, payload, **sign)
        return self.client.post("/slack/events", content=body, headers=signed)

    def kill(self, name: str) -> None:
        """SIGKILL a process and everything it started (RQ's work horse runs in its own group),
        and return once each has exited: a worker still dying holds its Redis connections, and a
        blocked dequeue of theirs could still be handed the next job."""
        process = self.processes[name]
        killed = [*descendants(process.pid), process.pid]
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(map(_exited, killed)) and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        """SIGTERM every process at once (each drains on its own), then wait for all of them."""
        self.client.close()
        running = [process for process in self.processes.values() if process.poll() is None]
        for process in running:
            _signal_group(process, signal.SIGTERM)
        for process in running:
            _wait_or_kill(process)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def _wait_or_kill(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.wait(timeout=10)


def _exited(pid: int) -> bool:
    """Whether `pid` has exited: gone, or a zombie (its files, sockets included, are closed)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")

"""The local MCP server of tests/mcp_server.py, run as a real process for a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import SOURCE_ROOT
from tests.polling import wait_for


class McpFixture:
    def __init__(
        self, workdir: Path, *, require_header: str | None = None, sse: bool = False, port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/{'sse' if sse else 'mcp'}"
        self.journal = workdir / f"mcp-journal-{self.port}.jsonl"
        self.journal.touch()
        self.log = workdir / f"mcp-server-{self.port}.log"
        command = [
            sys.executable,
            "-m",
            "tests.mcp_server",
            "--http",
            str(self.port),
            "--journal",
            str(self.journal),
        ]
        if require_header:
            command += ["--require-header", require_header]
        if sse:
            command.append("--sse")
        with self.log.open("w") as out:
            self.process = subprocess.Popen(command, cwd=SOURCE_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def start(self) -> McpFixture:
        wait_for(self._answers, what="the MCP server to listen")
        return self

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()

    def entries(self, event: str | None = None) -> list[dict]:
        lines = [json.loads(line) for line in self.journal.read_text().splitlines() if line.strip()]
        return [entry for entry in lines if event is None or entry["event"] == event]

    def calls(self, tool: str) -> list[dict]:
        return [entry for entry in self.entries("call") if entry["tool"] == tool]

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the MCP server exited:\n{self.log.read_text()}")
        try:
            httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
        except httpx.TransportError:
            return False
        return True

"""What the planted-secrets test plants, and the routes a hostile turn takes to find it.

Every secret is a random value of a shape no redaction pattern knows (not `xoxb-…`, not
`sk-…`), so only a route that is really closed keeps it out of sight: masking by shape cannot
hide a leak. Each route runs as its own session in its own channel, so a leak is named by route.
"""

from __future__ import annotations

import http.server
import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.testing import Reply, calls, text


@dataclass(frozen=True)
class Planted:
    bot_token: str
    signing_secret: str
    llm_api_key: str
    redis_password: str
    repo_token: str
    repo_query_token: str
    netrc_password: str
    metadata_credential: str
    internal_secret: str
    other_team: str  # the directory of another team's workspaces, which no session may list

    @classmethod
    def new(cls) -> Planted:
        def value(name: str) -> str:
            return f"planted-{name}-{secrets.token_hex(8)}"

        return cls(
            bot_token=value("bot-token"),
            signing_secret=value("signing-secret"),
            llm_api_key=value("llm-key"),
            redis_password=value("redis-password"),
            repo_token=value("repo-token"),
            repo_query_token=value("repo-query"),
            netrc_password=value("netrc-password"),
            metadata_credential=value("metadata-credential"),
            internal_secret=value("internal-service"),
            other_team=f"TPLANTED{secrets.token_hex(6).upper()}",
        )

    def values(self) -> dict[str, str]:
        return dict(vars(self))

    def found_in(self, evidence: str) -> list[str]:
        return sorted(name for name, value in self.values().items() if value in evidence)


def with_password(redis_url: str, password: str) -> str:
    """The test Redis's URL with a password: a Redis without AUTH accepts any for `default`."""
    scheme, rest = redis_url.split("://", 1)
    return f"{scheme}://default:{password}@{rest}"


@dataclass
class Listener:
    """One local HTTP server playing three parts: a git host where every repository is missing
    (404, so git repeats the URL), an internal service holding a secret, and, as the proxy of
    httpx's ALL_PROXY, the cloud metadata endpoint (so no packet ever goes to 169.254.169.254)."""

    planted: Planted
    requests: list[str] = field(default_factory=list)

    def start(self) -> Listener:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str) -> tuple[int, str]:
        self.requests.append(path)
        if path.startswith("http://169.254.169.254/"):
            credentials = {"AccessKeyId": "ASIAPLANTED", "SecretAccessKey": self.planted.metadata_credential}
            return 200, json.dumps(credentials)
        if ".git" in path:
            return 404, "repository not found"
        return 200, f"internal service; its secret is {self.planted.internal_secret}"


def _handler(listener: Listener) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = listener.answer(self.path)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


CLONE_CHANNEL = "CCLONE"
SLACK_ERROR_CHANNEL = "CSLACKERR"
ROUTE_NAMES = (
    "clone", "provider-error", "slack-error", "shell-parent-environ", "shell-every-environ", "shell-env",
    "shell-list-workspaces", "shell-netrc", "http-metadata", "http-local-service",
)  # fmt: skip


@dataclass(frozen=True)
class Route:
    name: str
    channel: str
    tool: str | None = None  # the one call the model makes, if any
    arguments: dict[str, Any] = field(default_factory=dict)
    model_error: dict[str, Any] | None = None  # the provider answers 401 with this body

    @property
    def words(self) -> str:
        return f"route:{self.name} please"


# Every process's environment, filtered as an attacker would: all of it overflows the output cap.
EVERY_ENVIRON = (
    "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -aE 'TOKEN|SECRET|KEY|REDIS|PASS' | sort -u"
)


def routes(planted: Planted, listener: Listener, redis_url: str) -> list[Route]:
    def shell(name: str, channel: str, command: str) -> Route:
        return Route(name, channel, "shell", {"command": command, "timeout": 20})

    def http_get(name: str, channel: str, url: str) -> Route:
        return Route(name, channel, "http_get", {"url": url, "timeout": 5})

    provider_body = {
        "error": {
            "message": f"Incorrect API key provided: {planted.llm_api_key} (you sent it to {redis_url})",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    return [
        Route("clone", CLONE_CHANNEL),
        Route("provider-error", "CPROVIDER", model_error=provider_body),
        Route("slack-error", SLACK_ERROR_CHANNEL),
        shell("shell-parent-environ", "CSHPPID", "cat /proc/$PPID/environ | tr '\\0' '\\n'"),
        shell("shell-every-environ", "CSHPROCS", EVERY_ENVIRON),
        shell("shell-env", "CSHENV", "env"),
        shell("shell-list-workspaces", "CSHLS", "ls ../../.. ../../../*"),
        shell("shell-netrc", "CSHNETRC", "cat ~/.netrc; cat $HOME/.netrc"),
        http_get("http-metadata", "CHTTPMETA", "http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
        http_get("http-local-service", "CHTTPLOCAL", f"http://{listener.address}/internal/secret"),
    ]  # fmt: skip


def repository_url(planted: Planted, listener: Listener) -> str:
    return f"http://x-access-token:{planted.repo_token}@{listener.address}/org/repo.git?private_token={planted.repo_query_token}"


def model_for(all_routes: list[Route]):
    """The fake model's answer to any request: the route's tool call first, then a short
    answer once the tool's result is in (or the provider's error, for that route)."""
    by_words = {route.words: route for route in all_routes}

    def answer(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        route = next((by_words[w] for m in messages for w in by_words if w in str(m.get("content"))), None)
        if route is None:
            return text("no route")
        if route.model_error is not None:
            return Reply(status=401, error=route.model_error)
        if route.tool is None or messages[-1].get("role") == "tool":
            return text(f"{route.name} done")
        return calls((f"call-{route.name}", route.tool, route.arguments))

    return answer


def plant_home_and_workspaces(root: Path, planted: Planted) -> dict[str, str]:
    """A HOME with a ~/.netrc, and another team's workspace next to the sessions' own."""
    home = root / "home"
    home.mkdir()
    (home / ".netrc").write_text(f"machine git.example.com login bot password {planted.netrc_password}\n")
    other = root / "workspaces" / planted.other_team / "CPRIVATE" / "1700000000.000001"
    other.mkdir(parents=True)
    (other / "notes.md").write_text("a private channel's work\n")
    return {"HOME": str(home), "AGENT_WORKDIR": str(root / "workspaces")}

"""`threadline sandbox`: the whole product on one machine, with Slack played by a local page.

Starts an embedded Redis when REDIS_URL is unset, the fake Slack Web API, the real `web` and
`worker` processes (the Procfile's commands) and the sandbox page, then prints the page's URL.
The model is LLM_BASE_URL when set, else the built-in demo model. Slack settings that are
missing get sandbox values; SLACK_API_URL always points at the fake, whose state the page shows.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from agent.redaction import redact_url
from gateway.processes.together import run_together
from gateway.sandbox.embedded_redis import EmbeddedRedis
from gateway.sandbox.fake_forge import FakeForge
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.page import CHANNELS, PERSON, SandboxPage
from gateway.sandbox.ports import free_port
from jobs.settings import SLACK_DEFAULT_API_URL, Settings

LOCAL_DIR = Path(".threadline-local")
SANDBOX_BOT_TOKEN = "xoxb-sandbox-token"
WEB_PORT = 3000  # the production default; another free port when it is taken
PAGE_PORT = 3001
SANDBOX_REPO = "sandbox/checkout"
READY_TIMEOUT_S = 60


@dataclass(frozen=True)
class SandboxConfig:
    """The environment the web and worker processes get, and what the page needs to drive them."""

    env: dict[str, str]
    signing_secret: str
    web_port: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class SandboxForge:
    """The sandbox's fake GitHub: the clone URL of its one repository, its API and token."""

    url: str
    api_url: str
    web_url: str
    token: str


def sandbox_config(
    environ: Mapping[str, str],
    fake_api_url: str,
    redis_url: str,
    checkout: Path | None = None,
    forge: SandboxForge | None = None,
) -> SandboxConfig:
    """Fill in what a sandbox needs; say which of the person's settings it overrides.

    With no CHANNEL_REPOS, sessions in the first channel start from a clone of `checkout` (the
    git repository the sandbox runs in), so the demo's `list the files` has something to show;
    with a `forge` (a local fake GitHub holding a copy of `checkout`), the clone comes from there
    and pull requests go there.
    """
    env = dict(environ)
    notes: list[str] = []
    if checkout is not None and not env.get("CHANNEL_REPOS"):
        repo: str | dict[str, str] = str(checkout)
        if forge is not None:
            repo = {"url": forge.url, "forge": "github", "repo": SANDBOX_REPO, "base": "main"}
            env.update(GITHUB_TOKEN=forge.token, GITHUB_API_URL=forge.api_url)
            notes.append(
                f"pull requests go to a local fake GitHub holding a copy of {checkout}: {forge.web_url}"
            )
        env["CHANNEL_REPOS"] = json.dumps({CHANNELS[0].id: repo})
        notes.append(f"#{CHANNELS[0].name} sessions start from a clone of {checkout} (CHANNEL_REPOS)")
    secret = env.get("SLACK_SIGNING_SECRET") or secrets.token_hex(16)
    api_url = env.get("SLACK_API_URL")
    if api_url and api_url != SLACK_DEFAULT_API_URL:
        notes.append(f"SLACK_API_URL={redact_url(api_url)} is replaced by the sandbox's fake Slack")
    web_port = int(env["PORT"]) if env.get("PORT") else port_or_free(WEB_PORT)
    env.update(
        SLACK_SIGNING_SECRET=secret,
        SLACK_BOT_TOKEN=env.get("SLACK_BOT_TOKEN") or SANDBOX_BOT_TOKEN,
        SLACK_API_URL=fake_api_url,
        REDIS_URL=redis_url,
        PORT=str(web_port),
    )
    env["SLACK_APPROVERS"] = env.get("SLACK_APPROVERS") or PERSON.id  # the page's one person approves
    env.pop("SLACK_APP_TOKEN", None)  # the sandbox speaks HTTP, never Socket Mode
    return SandboxConfig(env=env, signing_secret=secret, web_port=web_port, notes=tuple(notes))


def git_checkout(directory: Path) -> Path | None:
    """The root of the git repository `directory` is in, if any."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def port_or_free(preferred: int) -> int:
    """`preferred` when nothing listens there, else a free port."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            return free_port()


def run_sandbox(page_port: int | None = None, say: Callable[[str], None] = print) -> int:
    settings = Settings.load()  # an invalid setting stops here, with its one line
    embedded = None if os.environ.get("REDIS_URL") else EmbeddedRedis(LOCAL_DIR / "redis")
    fake: FakeSlack | None = None
    page: SandboxPage | None = None
    forge: FakeForge | None = None
    try:
        redis_url = embedded.start() if embedded else os.environ["REDIS_URL"]
        fake = FakeSlack(bot_token=os.environ.get("SLACK_BOT_TOKEN") or SANDBOX_BOT_TOKEN).start()
        # The embedded Redis is one server: Sentinels the environment names are not its.
        environ = {k: v for k, v in os.environ.items() if not (embedded and k == "REDIS_SENTINELS")}
        checkout = git_checkout(Path.cwd())
        forge, served = _forge_for(checkout) if not environ.get("CHANNEL_REPOS") else (None, None)
        config = sandbox_config(environ, fake.api_url, redis_url, checkout, served)
        web_url = f"http://127.0.0.1:{config.web_port}"
        page = SandboxPage(
            fake, f"{web_url}/slack/events", config.signing_secret, command=settings.SLACK_COMMAND,
            port=page_port if page_port is not None else port_or_free(PAGE_PORT),
        ).start()  # fmt: skip
        for line in _summary(config, embedded, settings, fake, web_url, page.url):
            say(line)
        threading.Thread(target=_announce_ready, args=(web_url, page.url, say), daemon=True).start()
        me = [sys.executable, "-m", "gateway.processes.cli"]
        return run_together({"web": [*me, "web"], "worker": [*me, "worker"]}, env=config.env)
    finally:
        for part in (page, fake, forge, embedded):
            if part is not None:
                part.stop()


def _forge_for(checkout: Path | None) -> tuple[FakeForge | None, SandboxForge | None]:
    """A local fake GitHub holding a copy of `checkout`, for the demo's pull requests."""
    if checkout is None:
        return None, None
    forge = FakeForge(LOCAL_DIR.resolve()).start()
    shutil.rmtree(forge.bare(SANDBOX_REPO), ignore_errors=True)  # a previous run's copy
    url = forge.add_repo_from(SANDBOX_REPO, checkout)
    token = "ghs_sandbox" + secrets.token_hex(12)
    forge.grant(token, "contents", "pull_requests")
    return forge, SandboxForge(url=url, api_url=forge.api_url, web_url=forge.url, token=token)


def _summary(
    config: SandboxConfig,
    embedded: EmbeddedRedis | None,
    settings: Settings,
    fake: FakeSlack,
    web_url: str,
    page_url: str,
) -> list[str]:
    # Printed to a terminal that may be shared or recorded: URLs lose their credentials. The page's
    # URL alone keeps its token: it is how the person opens the page, and it dies with this run.
    model = (
        f"{redact_url(settings.LLM_BASE_URL)} ({settings.LLM_MODEL})"
        if settings.LLM_BASE_URL
        else "the built-in demo model (set LLM_BASE_URL, LLM_MODEL, LLM_API_KEY for a real one)"
    )
    redis_url = redact_url(config.env["REDIS_URL"])
    redis = f"embedded, {embedded.how} ({redis_url})" if embedded else redis_url
    return [
        "threadline sandbox",
        f"  redis   {redis}",
        f"  slack   fake Web API at {fake.api_url}",
        f"  web     {web_url}/slack/events (signed requests, as from Slack)",
        f"  model   {model}",
        *(f"  note    {note}" for note in config.notes),
        f"Sandbox: {page_url}  (open it in a browser; Ctrl-C stops everything)",
    ]


def _announce_ready(web_url: str, page_url: str, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{web_url}/healthz", timeout=1).status_code == 200:
                say(f"threadline sandbox: ready at {page_url}")
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    say(f"threadline sandbox: web did not answer {web_url}/healthz within {READY_TIMEOUT_S}s")

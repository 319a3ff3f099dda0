"""git for publishing, run so that nothing the sandbox wrote can steer it or read its token.

The workspace is written by the model's commands: its `.git/config` may name hooks, an
fsmonitor command, filters, a credential helper or `insteadOf` rewrites, and its `.git/hooks`
may hold scripts. So publishing never runs git *in* the workspace. It runs git on a bare
repository of the worker's own (next to the workspace, out of the sandbox's reach), with the
workspace only as the work tree whose files `git add` reads; and every run ignores the system
and global configuration, turns hooks and fsmonitor off, and never prompts. The token goes to
the one command that needs it, as an `http.extraHeader` in that process's environment: never
in a configuration file, a remote URL, an argument (which any local user could read in
/proc) or a log line.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from agent.redaction import redact_text
from jobs.forge.api import ForgeToken

GIT_TIMEOUT_S = 120
# Every run: no hooks, no fsmonitor, no credential helper, no pager or editor to run.
SAFE_CONFIG = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("credential.helper", ""),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.sshCommand", "false"),
    ("protocol.file.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("gc.auto", "0"),
)


class GitFailed(Exception):
    """git exited non-zero; `stderr` is its complaint, token-free and URL-redacted."""

    def __init__(self, stderr: str) -> None:
        super().__init__(stderr)
        self.stderr = stderr


def auth_environment(token: ForgeToken | None) -> dict[str, str]:
    """The environment that gives one git process `token` (HTTP Basic, the forge's user name)."""
    if token is None:
        return {}
    credential = base64.b64encode(f"{token.git_user}:{token.secret}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {credential}",
    }


def clean_environment(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """No system or global configuration, no prompt, no inherited GIT_* variable."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "HOME"}
    return {
        **inherited,
        "HOME": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        **extra,
    }


def git(
    git_dir: Path,
    *arguments: str,
    work_tree: Path | None = None,
    token: ForgeToken | None = None,
    environment: Mapping[str, str] = {},
    input_text: str | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
) -> str:
    """Run git on the bare repository `git_dir`; its standard output, or GitFailed."""
    options = [f"--git-dir={git_dir}"]
    if work_tree is not None:
        options.append(f"--work-tree={work_tree}")
    for name, value in SAFE_CONFIG:
        options += ["-c", f"{name}={value}"]
    extra = {**auth_environment(token), **environment, "GIT_INDEX_FILE": str(git_dir / "threadline-index")}
    try:
        done = subprocess.run(
            ["git", *options, *arguments],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=clean_environment(extra),
            input=input_text if input_text is not None else "",
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {arguments[0]} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        raise GitFailed(
            redact_text(done.stderr.strip())[-1500:] or f"git {arguments[0]} exited {done.returncode}"
        )
    return done.stdout

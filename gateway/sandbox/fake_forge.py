"""A fake GitHub (and GitLab): repositories over git's smart HTTP and the REST calls a pull
request (a merge request) needs.

Git goes through the real `git http-backend` (CGI) on bare repositories in a directory of the
fake's own; the REST side answers as GitHub does the few calls threadline makes: list, open
and edit pull requests, and a commit's combined status. Both check the token the way GitHub
does: git asks for Basic credentials (any user name, the token as the password), the API takes
`Authorization: Bearer <token>`. A token holds rights ("contents", "pull_requests"); a call
needing one it lacks gets GitHub's 403 with `X-Accepted-GitHub-Permissions`. Every call is
recorded, headers included, for the tests to read.

    forge = FakeForge(tmp_path).start()
    url = forge.add_repo("acme/app", files={"README.md": "hi\\n"})   # http://…/acme/app.git
    forge.grant("ghs-token", "contents", "pull_requests")
    settings.GITHUB_API_URL = forge.api_url
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import jwt

from agent.testing import LocalServer, QuietHandler

GIT_PATH = re.compile(r"^/(?P<repo>[\w.-]+/[\w.-]+)\.git(?P<rest>/.*)$")
PULL_PAGE = re.compile(r"^/(?P<repo>[\w.-]+/[\w.-]+)/pull/(?P<number>\d+)$")
INSTALLATION_PATH = re.compile(r"^/api/repos/(?P<repo>[\w.-]+/[\w.-]+)/installation$")
ACCESS_TOKENS_PATH = re.compile(r"^/api/app/installations/(?P<id>\d+)/access_tokens$")
API_PATH = re.compile(r"^/api/repos/(?P<repo>[\w.-]+/[\w.-]+)(?:/(?P<rest>.*))?$")
GITLAB_API_PATH = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)(?:/(?P<rest>.*))?$")
PIPELINE_OF = {"pending": "running", "success": "success", "failure": "failed", "error": "canceled"}
PROTECTED_HOOK = """#!/bin/sh
while read old new ref; do
  for branch in {branches}; do
    if [ "$ref" = "refs/heads/$branch" ]; then
      echo "error: GH006: Protected branch update failed for $ref." >&2
      exit 1
    fi
  done
done
"""


@dataclass
class ForgeCall:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    status: int


@dataclass
class PullRequest:
    number: int
    repo: str
    title: str
    body: str
    head: str
    base: str
    state: str = "open"

    def shown(self, forge: FakeForge) -> dict[str, Any]:
        sha = forge.head_of(self.repo, self.head)
        mergeable = forge.mergeable.get(self.head)
        if mergeable is None:
            mergeable = forge.merges_cleanly(self.repo, self.base, self.head)
        return {
            "number": self.number,
            "title": self.title,
            "body": self.body,
            "state": self.state,
            "html_url": f"{forge.url}/{self.repo}/pull/{self.number}",
            "head": {"ref": self.head, "sha": sha},
            "base": {"ref": self.base},
            "mergeable": mergeable,
        }


@dataclass(frozen=True)
class App:
    """A GitHub App installed on `repos` with `rights`, checking its JWTs with `public_key`."""

    app_id: int
    public_key: str  # PEM
    installation_id: int
    repos: tuple[str, ...]
    rights: tuple[str, ...]


@dataclass
class _State:
    rights: dict[str, set[str]] = field(default_factory=dict)
    apps: list[App] = field(default_factory=list)
    minted: list[str] = field(default_factory=list)  # installation tokens, oldest first
    pulls: list[PullRequest] = field(default_factory=list)
    calls: list[ForgeCall] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)  # sha -> combined state


class FakeForge:
    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = root / "forge"
        self.root.mkdir(parents=True, exist_ok=True)
        self.state = _State()
        self.mergeable: dict[str, bool] = {}  # head branch -> `mergeable` forced (else git's merge says)
        # Set: each push waits (its request read whole) until the test sets this; `held` counts them.
        self.hold_pushes: threading.Event | None = None
        self.held = 0
        self._lock = threading.Lock()
        self._server = LocalServer(_handler_for(self), "fake-forge", host, port)

    def start(self) -> FakeForge:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    @property
    def gitlab_api_url(self) -> str:
        return f"{self.url}/api/v4"

    # -- what a test sets up ---------------------------------------------------------------

    def add_repo(self, repo: str, files: dict[str, str], *, base: str = "main") -> str:
        """A bare repository `repo` ("owner/name") whose `base` holds `files`; its clone URL."""
        bare = self.bare(repo)
        _git("init", "--quiet", "--bare", f"--initial-branch={base}", str(bare))
        self.commit(repo, base, files, "initial")
        return f"{self.url}/{repo}.git"

    def commit(self, repo: str, branch: str, files: dict[str, str], message: str = "change") -> str:
        """`files` written on top of `branch` (made if new) as one commit, as someone else's push; its sha."""
        bare = str(self.bare(repo))
        with tempfile.TemporaryDirectory() as tmp:
            _git("init", "--quiet", tmp)
            if self.head_of(repo, branch):
                _git("-C", tmp, "fetch", "--quiet", bare, f"refs/heads/{branch}")
                _git("-C", tmp, "checkout", "--quiet", "FETCH_HEAD")
            for name, content in files.items():
                path = Path(tmp, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
            _git("-C", tmp, "add", "-A")
            identity = ["-c", "user.name=Forge", "-c", "user.email=forge@example.com"]
            _git("-C", tmp, *identity, "commit", "--quiet", "-m", message)
            _git("-C", tmp, "push", "--quiet", bare, f"HEAD:refs/heads/{branch}")
            return _git("-C", tmp, "rev-parse", "HEAD").strip()

    def add_repo_from(self, repo: str, source: Path, *, base: str = "main") -> str:
        """A bare copy of the local repository `source` whose `base` is `source`'s HEAD; its URL.
        Read as data (a clone): none of `source`'s hooks or configuration runs."""
        bare = self.bare(repo)
        _git("clone", "--quiet", "--bare", "--no-local", str(source), str(bare))
        head = _git("-C", str(bare), "rev-parse", "HEAD").strip()
        _git("-C", str(bare), "update-ref", f"refs/heads/{base}", head)
        _git("-C", str(bare), "symbolic-ref", "HEAD", f"refs/heads/{base}")
        return f"{self.url}/{repo}.git"

    def grant(self, token: str, *rights: str) -> None:
        with self._lock:
            self.state.rights[token] = set(rights)

    def install_app(self, app: App) -> None:
        with self._lock:
            self.state.apps.append(app)

    def minted(self) -> list[str]:
        with self._lock:
            return list(self.state.minted)

    def protect(self, repo: str, *branches: str) -> None:
        """Pushes to these branches are refused, as GitHub's branch protection refuses them."""
        hook = self.bare(repo) / "hooks" / "pre-receive"
        hook.write_text(PROTECTED_HOOK.format(branches=" ".join(branches)))
        hook.chmod(0o755)

    def set_status(self, sha: str, state: str) -> None:
        with self._lock:
            self.state.statuses[sha] = state

    # -- what a test reads -----------------------------------------------------------------

    def bare(self, repo: str) -> Path:
        return self.root / f"{repo}.git"

    def head_of(self, repo: str, branch: str) -> str | None:
        found = subprocess.run(
            ["git", "-C", str(self.bare(repo)), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return found.stdout.strip() or None

    def file_at(self, repo: str, ref: str, path: str) -> str:
        return self.git_in(repo, "show", f"{ref}:{path}")

    def git_in(self, repo: str, *arguments: str) -> str:
        """git run in `repo`'s bare repository; its output."""
        return _git("-C", str(self.bare(repo)), *arguments)

    def merges_cleanly(self, repo: str, base: str, head: str) -> bool:
        """What GitHub's `mergeable` says: `head` merges into `base` without a conflict."""
        merge = subprocess.run(
            ["git", "-C", str(self.bare(repo)), "merge-tree", "--write-tree", base, head],
            capture_output=True,
            check=False,
        )
        return merge.returncode == 0

    def pulls(self) -> list[PullRequest]:
        with self._lock:
            return list(self.state.pulls)

    def pull_page(self, repo: str, number: int) -> str:
        """What the pull request's link shows in the sandbox: its title, branches and changes."""
        pull = next((p for p in self.pulls() if p.repo == repo and p.number == number), None)
        if pull is None:
            return ""
        changes = _git("-C", str(self.bare(repo)), "diff", "--stat", f"{pull.base}...{pull.head}")
        heading = f"#{pull.number} {pull.title}\n{pull.head} → {pull.base} ({pull.state})"
        return f"{heading}\n\n{pull.body}\n\n{changes}"

    def calls(self) -> list[ForgeCall]:
        with self._lock:
            return list(self.state.calls)

    # -- serving ---------------------------------------------------------------------------

    def token_of(self, headers: dict[str, str]) -> str | None:
        value = headers.get("authorization", "")
        scheme, _, credential = value.partition(" ")
        if headers.get("private-token"):  # GitLab's own header
            return headers["private-token"]
        if scheme.lower() in ("bearer", "token"):
            return credential
        if scheme.lower() == "basic":
            decoded = base64.b64decode(credential).decode(errors="replace")
            return decoded.partition(":")[2]
        return None

    def allows(self, headers: dict[str, str], right: str) -> bool | None:
        """None: no valid token (401); False: valid but without `right` (403)."""
        token = self.token_of(headers)
        with self._lock:
            rights = self.state.rights.get(token or "")
        if rights is None:
            return None
        return right in rights

    def as_app(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, Any] | None:
        """A GitHub App's own calls (JWT): its installation on a repository, a new installation
        token; None for any other call."""
        repo, access = INSTALLATION_PATH.match(path), ACCESS_TOKENS_PATH.match(path)
        if not ((repo and method == "GET") or (access and method == "POST")):
            return None
        app = self._app_of(headers.get("authorization", "").removeprefix("Bearer "))
        if app is None:
            return 401, {"message": "A JSON web token could not be decoded"}
        if repo:
            if repo.group("repo") not in app.repos:
                return 404, {"message": "Not Found"}
            return 200, {"id": app.installation_id, "app_id": app.app_id}
        assert access is not None
        if int(access.group("id")) != app.installation_id:
            return 404, {"message": "Not Found"}
        token = "ghs_" + secrets.token_hex(18)
        with self._lock:
            self.state.rights[token] = set(app.rights)
            self.state.minted.append(token)
        return 201, {"token": token, "expires_at": "2099-01-01T00:00:00Z"}

    def _app_of(self, token: str) -> App | None:
        with self._lock:
            apps = list(self.state.apps)
        for app in apps:
            try:
                claims = jwt.decode(
                    token, app.public_key, algorithms=["RS256"], options={"require": ["exp", "iat", "iss"]}
                )
            except jwt.PyJWTError:
                continue
            if claims["iss"] == str(app.app_id):
                return app
        return None

    def record(self, call: ForgeCall) -> None:
        with self._lock:
            self.state.calls.append(call)

    def api(
        self, method: str, repo: str, rest: str, query: dict[str, list[str]], body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        if not self.bare(repo).is_dir():
            return 404, {"message": "Not Found"}
        if rest == "" and method == "GET":
            return 200, {"full_name": repo}
        if rest == "pulls" and method == "GET":
            head = (query.get("head") or [""])[0].partition(":")[2]
            found = [
                p.shown(self)
                for p in self.pulls()
                if p.repo == repo and p.state == "open" and (not head or p.head == head)
            ]
            return 200, found
        if rest == "pulls" and method == "POST":
            body = body or {}
            code, pull = self.open_pull(
                repo, body.get("title"), body.get("body"), body.get("head"), body.get("base")
            )
            if pull is None:  # GitHub says 422 for both
                exists = {"message": f"A pull request already exists for {body.get('head')}."}
                invalid = {"field": "head", "code": "invalid"}
                return 422, {"message": "Validation Failed", "errors": [exists if code == 422 else invalid]}
            return 201, pull.shown(self)
        number = re.fullmatch(r"pulls/(\d+)", rest)
        if number and method == "PATCH":
            body = body or {}
            edited = self.edit_pull(repo, int(number.group(1)), body.get("title"), body.get("body"))
            return (200, edited.shown(self)) if edited else (404, {"message": "Not Found"})
        status = re.fullmatch(r"commits/([0-9a-f]{40})/status", rest)
        if status and method == "GET":
            state = self.status_of(status.group(1))
            return 200, {
                "state": state or "pending",
                "sha": status.group(1),
                "total_count": int(state is not None),
            }
        return 404, {"message": "Not Found"}

    def open_pull(
        self, repo: str, title: object, body: object, head: object, base: object
    ) -> tuple[int, PullRequest | None]:
        """A new pull request, as both faces open one: 201, 400 (no such head) or 422 (one is open)."""
        if self.head_of(repo, str(head)) is None:
            return 400, None
        with self._lock:
            if any(p.repo == repo and p.head == head and p.state == "open" for p in self.state.pulls):
                return 422, None
            pull = PullRequest(
                len(self.state.pulls) + 1, repo, str(title or ""), str(body or ""), str(head), str(base)
            )
            self.state.pulls.append(pull)
        return 201, pull

    def edit_pull(self, repo: str, number: int, title: object, body: object) -> PullRequest | None:
        with self._lock:
            pull = next((p for p in self.state.pulls if p.repo == repo and p.number == number), None)
            if pull is not None:
                pull.title = str(title) if title is not None else pull.title
                pull.body = str(body) if body is not None else pull.body
        return pull

    def status_of(self, sha: str) -> str | None:
        with self._lock:
            return self.state.statuses.get(sha)

    def git(self, handler: BaseHTTPRequestHandler, repo: str, rest: str, query: str, body: bytes) -> None:
        """One smart-HTTP request, answered by `git http-backend`; recorded before it is answered,
        so a push whose sender died meanwhile is recorded too."""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        pushing = "git-receive-pack" in rest or "service=git-receive-pack" in query
        allowed = self.allows(headers, "contents")
        if allowed is None:
            status, payload, extra = (
                401,
                b"Authentication required",
                {"WWW-Authenticate": 'Basic realm="forge"'},
            )
        elif pushing and not allowed:
            status, payload, extra = 403, b"Write access to repository not granted.", {}
        else:
            if pushing and handler.command == "POST" and self.hold_pushes is not None:
                with self._lock:
                    self.held += 1
                self.hold_pushes.wait(timeout=60)
            status, payload, extra = self._backend(handler, repo, rest, query, body)
        self.record(ForgeCall(handler.command, f"/{repo}.git{rest}", headers, None, status))
        handler._raw(status, payload, extra)  # type: ignore[attr-defined]  # a QuietHandler

    def _backend(
        self, handler: BaseHTTPRequestHandler, repo: str, rest: str, query: str, body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "forge-user",  # receive-pack is served only to someone authenticated
            "REQUEST_METHOD": handler.command,
            "PATH_INFO": f"/{repo}.git{rest}",
            "QUERY_STRING": query,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": handler.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": handler.headers.get("Git-Protocol", ""),
        }
        answer = subprocess.run(
            ["git", "http-backend"], input=body, capture_output=True, env=environment, check=False, timeout=60
        )
        head, _, payload = answer.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode(errors="replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name] = value.strip()
        return status, payload, headers


def _handler_for(forge: FakeForge) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def _serve(self) -> None:
            parsed = urlparse(self.path)
            body = self._body()
            git = GIT_PATH.match(parsed.path)
            if git:
                return forge.git(self, git.group("repo"), git.group("rest"), parsed.query, body)
            pull_page = PULL_PAGE.match(parsed.path)
            if pull_page and self.command == "GET":
                shown = forge.pull_page(pull_page.group("repo"), int(pull_page.group("number")))
                return self._raw(
                    200 if shown else 404, shown.encode(), {"Content-Type": "text/plain; charset=utf-8"}
                )
            headers = {k.lower(): v for k, v in self.headers.items()}
            app_call = forge.as_app(self.command, parsed.path, headers)
            if app_call is not None:
                forge.record(ForgeCall(self.command, parsed.path, headers, None, app_call[0]))
                return self._json(*app_call, {})
            gitlab = GITLAB_API_PATH.match(parsed.path)
            if gitlab:
                return self._gitlab(
                    gitlab.group("project"), gitlab.group("rest") or "", parsed.query, headers, body
                )
            api = API_PATH.match(parsed.path)
            if api is None:
                return self._json(404, {"message": "Not Found"}, {})
            payload = json.loads(body) if body else None
            allowed = forge.allows(headers, "pull_requests")
            if allowed is None:
                status, answer, extra = 401, {"message": "Bad credentials"}, {}
            elif not allowed:
                status, answer = 403, {"message": "Resource not accessible by personal access token"}
                extra = {"X-Accepted-GitHub-Permissions": "pull_requests=write"}
            else:
                status, answer = forge.api(
                    self.command, api.group("repo"), api.group("rest") or "", parse_qs(parsed.query), payload
                )
                extra = {}
            forge.record(ForgeCall(self.command, parsed.path, headers, payload, status))
            self._json(status, answer, extra)

        def _gitlab(self, project: str, rest: str, query: str, headers: dict[str, str], body: bytes) -> None:
            payload = json.loads(body) if body else {}
            allowed = forge.allows(headers, "pull_requests")
            if allowed is None:
                status, answer = 401, {"message": "401 Unauthorized"}
            elif not allowed:
                status, answer = 403, {"message": "403 Forbidden"}
            else:
                status, answer = gitlab_answer(forge, self.command, project, rest, parse_qs(query), payload)
            forge.record(ForgeCall(self.command, self.path, headers, payload, status))
            self._json(status, answer, {})

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._chunked()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _chunked(self) -> bytes:
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()

        def _json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
            self._raw(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **headers})

    return Handler


# -- the GitLab face: REST v4 on the same repositories and pull requests -----------------------
# A project is its URL-encoded path (`acme%2Fapp`); a merge request is the fake's pull request with
# GitLab's fields (`iid`, `web_url`, `source_branch`, `has_conflicts`); the token comes as
# `Authorization: Bearer` or `PRIVATE-TOKEN`, and one without "pull_requests" gets a bare 403; a
# commit's pipeline status is the GitHub state the test set, named as GitLab names it.


def gitlab_answer(
    forge: FakeForge, method: str, project: str, rest: str, query: dict[str, list[str]], body: dict[str, Any]
) -> tuple[int, Any]:
    repo = unquote(project)
    if ".." in repo or not forge.bare(repo).is_dir():
        return 404, {"message": "404 Project Not Found"}
    if rest == "" and method == "GET":
        return 200, {"path_with_namespace": repo}
    if rest == "merge_requests" and method == "GET":
        source = (query.get("source_branch") or [""])[0]
        wanted = [p for p in forge.pulls() if p.repo == repo and p.state == "open"]
        return 200, [gitlab_shown(forge, p) for p in wanted if not source or p.head == source]
    if rest == "merge_requests" and method == "POST":
        status, pull = forge.open_pull(
            repo,
            body.get("title"),
            body.get("description"),
            body.get("source_branch"),
            body.get("target_branch"),
        )
        if pull is None:
            return 409 if status == 422 else status, {
                "message": ["Another open merge request already exists"]
            }
        return 201, gitlab_shown(forge, pull)
    number = re.fullmatch(r"merge_requests/(\d+)", rest)
    if number and method == "PUT":
        pull = forge.edit_pull(repo, int(number.group(1)), body.get("title"), body.get("description"))
        return (200, gitlab_shown(forge, pull)) if pull else (404, {"message": "404 Not found"})
    commit = re.fullmatch(r"repository/commits/([0-9a-f]{40})", rest)
    if commit and method == "GET":
        state = forge.status_of(commit.group(1))
        return 200, {"id": commit.group(1), "status": PIPELINE_OF.get(state) if state else None}
    return 404, {"error": "404 Not Found"}


def gitlab_shown(forge: FakeForge, pull: PullRequest) -> dict[str, Any]:
    github = pull.shown(forge)
    return {
        "iid": pull.number,
        "title": pull.title,
        "description": pull.body,
        "state": "opened" if pull.state == "open" else pull.state,
        "source_branch": pull.head,
        "target_branch": pull.base,
        "sha": github["head"]["sha"],
        "web_url": f"{forge.url}/{pull.repo}/-/merge_requests/{pull.number}",
        "has_conflicts": github["mergeable"] is False,
    }


def _git(*arguments: str) -> str:
    return subprocess.run(["git", *arguments], check=True, capture_output=True, text=True).stdout

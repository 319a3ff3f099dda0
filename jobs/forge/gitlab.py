"""GitLab's REST API (v4) for merge requests, in the shape of jobs.forge.api: the thread's open
merge request found by its source branch, opened, edited, and the pipeline state of a commit
named as GitHub's CI states. Errors become `ForgeRefused` with what they mean."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from agent.redaction import redact_text
from jobs.forge.api import ForgeRefused, Pull, RestClient, RestForge, error_body

# GitLab's pipeline statuses as the card's CI states; any other (created, running, manual, …) is pending.
PIPELINE_STATES: dict[str, str | None] = {
    "success": "success",
    "failed": "failure",
    "canceled": "error",
    "skipped": None,
}


class GitLab(RestForge):
    def __init__(self, api_url: str, token: str | None, repo: str) -> None:
        self.repo = repo
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        prefix = f"/projects/{quote(repo, safe='')}"
        super().__init__(RestClient(api_url, prefix, headers, lambda answer: refusal(answer, repo)))

    def open_pull_for(self, branch: str) -> Pull | None:
        found = self._api.call("GET", "merge_requests", params={"source_branch": branch, "state": "opened"})
        return _pull(found[0]) if found else None

    def open_pull(self, *, title: str, body: str, head: str, base: str) -> Pull:
        asked = {"source_branch": head, "target_branch": base, "title": title, "description": body}
        return _pull(self._api.call("POST", "merge_requests", json=asked))

    def edit_pull(self, number: int, *, title: str, body: str) -> Pull:
        return _pull(
            self._api.call("PUT", f"merge_requests/{number}", json={"title": title, "description": body})
        )

    def ci_state(self, sha: str) -> str | None:
        """The state of `sha`'s latest pipeline; None: no pipeline ran on it."""
        try:
            commit = self._api.call("GET", f"repository/commits/{sha}")
        except ForgeRefused:
            return None
        status = commit.get("status")
        return PIPELINE_STATES.get(status, "pending") if status else None


def _pull(answer: dict[str, Any]) -> Pull:
    return Pull(
        number=int(answer["iid"]), url=str(answer["web_url"]), conflicts=bool(answer.get("has_conflicts"))
    )


def refusal(answer: httpx.Response, repo: str) -> str:
    status, body = answer.status_code, error_body(answer)
    message = redact_text(str(body.get("message") or body.get("error") or ""))[:500]
    if status == 401:
        return "the forge did not accept the token (GITLAB_TOKEN missing, expired or revoked)"
    if status == 403:
        return f"the token may not do this on {repo}: it needs the api scope and at least the Developer role"
    if status == 404:
        return f"the forge has no project {repo}, or the token cannot see it"
    return f"the forge answered HTTP {status}: {message or answer.reason_phrase}"

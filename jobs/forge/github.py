"""GitHub's REST API for pull requests: find the thread's open one, open it, edit it, and read
the combined CI status of its head. Errors become `ForgeRefused` with what they mean; a 403
names the right the token lacks (GitHub's `X-Accepted-GitHub-Permissions`)."""

from __future__ import annotations

from typing import Any

import httpx

from agent.redaction import redact_text
from jobs.forge.api import ForgeRefused, Pull, RestClient, RestForge, error_body

API_VERSION = "2022-11-28"


class GitHub(RestForge):
    def __init__(self, api_url: str, token: str | None, repo: str) -> None:
        self.repo = repo
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            **({"Authorization": f"Bearer {token}"} if token else {}),
        }
        super().__init__(RestClient(api_url, f"/repos/{repo}", headers, lambda answer: refusal(answer, repo)))

    def open_pull_for(self, branch: str) -> Pull | None:
        owner = self.repo.split("/")[0]
        found = self._api.call("GET", "pulls", params={"head": f"{owner}:{branch}", "state": "open"})
        return _pull(found[0]) if found else None

    def open_pull(self, *, title: str, body: str, head: str, base: str) -> Pull:
        return _pull(
            self._api.call("POST", "pulls", json={"title": title, "body": body, "head": head, "base": base})
        )

    def edit_pull(self, number: int, *, title: str, body: str) -> Pull:
        return _pull(self._api.call("PATCH", f"pulls/{number}", json={"title": title, "body": body}))

    def ci_state(self, sha: str) -> str | None:
        """GitHub's combined status of `sha` (pending, success, failure); None: no CI reports on it."""
        try:
            combined = self._api.call("GET", f"commits/{sha}/status")
        except ForgeRefused:
            return None
        return str(combined["state"]) if combined.get("total_count") and combined.get("state") else None


def _pull(answer: dict[str, Any]) -> Pull:
    return Pull(
        number=int(answer["number"]), url=str(answer["html_url"]), conflicts=answer.get("mergeable") is False
    )


def refusal(answer: httpx.Response, repo: str) -> str:
    status, body = answer.status_code, error_body(answer)
    message = str(body.get("message", ""))
    if status == 401:
        return "the forge did not accept the token (GITHUB_TOKEN missing, expired or revoked)"
    if status == 403:
        needed = answer.headers.get("X-Accepted-GitHub-Permissions")
        if needed:
            return f"the token lacks the right this needs: {needed}"
        return f"the forge refused: {redact_text(message)[:300] or 'HTTP 403'}"
    if status == 404:
        return f"the forge has no repository {repo}, or the token cannot see it"
    details = [str(e.get("message") or e.get("code")) for e in body.get("errors", []) if isinstance(e, dict)]
    said = "; ".join([message, *details])
    return f"the forge answered HTTP {status}: {redact_text(said)[:500] or answer.reason_phrase}"

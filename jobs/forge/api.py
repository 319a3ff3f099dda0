"""A forge in the one shape pull requests need, whichever forge it is (jobs.forge.github,
jobs.forge.gitlab): the thread's open pull request found by its branch, opened, edited, and the
CI state of a commit as GitHub names them (pending, success, failure, error)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

import httpx

TIMEOUT_S = 30.0


class ForgeRefused(Exception):
    """The forge said no, in words for the model and the thread."""


@dataclass(frozen=True)
class ForgeToken:
    """A forge's token, and the user name git gives with it over HTTP Basic (GitHub's
    installation tokens need `x-access-token`, GitLab's OAuth tokens `oauth2`)."""

    secret: str
    git_user: str


@dataclass(frozen=True)
class Pull:
    """A pull request (GitHub) or merge request (GitLab) as the card shows it."""

    number: int  # GitHub's number, GitLab's iid: what people quote
    url: str
    conflicts: bool  # the forge says it does not merge cleanly into its base


class Forge(Protocol):
    def __enter__(self) -> Forge: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None: ...

    def open_pull_for(self, branch: str) -> Pull | None: ...

    def open_pull(self, *, title: str, body: str, head: str, base: str) -> Pull: ...

    def edit_pull(self, number: int, *, title: str, body: str) -> Pull: ...

    def ci_state(self, sha: str) -> str | None: ...

    def check(self) -> None:
        """Raise ForgeRefused unless the token can see the repository."""


class RestClient:
    """One forge REST API under `prefix` (a repository's or project's path): JSON in and out, a
    failure as `ForgeRefused` in the words `refusal` finds for it."""

    def __init__(
        self,
        api_url: str,
        prefix: str,
        headers: dict[str, str],
        refusal: Callable[[httpx.Response], str],
    ) -> None:
        self._prefix = prefix
        self._refusal = refusal
        self._client = httpx.Client(base_url=api_url.rstrip("/"), timeout=TIMEOUT_S, headers=headers)

    def close(self) -> None:
        self._client.close()

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            answer = self._client.request(method, f"{self._prefix}/{path}".rstrip("/"), **kwargs)
        except httpx.HTTPError as error:
            raise ForgeRefused(f"the forge could not be reached ({type(error).__name__})") from None
        if answer.is_success:
            return answer.json()
        raise ForgeRefused(self._refusal(answer))


class RestForge:
    """What both forge clients share: one `RestClient`, closed on leaving the `with`, and
    `check`, a read of the repository (or project) the client is for."""

    def __init__(self, api: RestClient) -> None:
        self._api = api

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self._api.close()

    def check(self) -> None:
        self._api.call("GET", "")


def error_body(answer: httpx.Response) -> dict[str, Any]:
    """A refusal's JSON object ({} when it is not one)."""
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}

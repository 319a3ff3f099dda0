"""The token a forge's repository is reached with: GITLAB_TOKEN, GITHUB_TOKEN, or one a GitHub
App mints.

A GitHub App (GITHUB_APP_ID + GITHUB_APP_PRIVATE_KEY_FILE) signs a JWT of ten minutes with its
private key, asks GitHub which installation covers the repository, and gets an installation
token for it: one per clone or push, good for an hour, limited to what the installation may
do. Nothing keeps the minted token: each use asks for a new one.
"""

from __future__ import annotations

import time

import httpx
import jwt

from jobs.forge.api import TIMEOUT_S, ForgeRefused, ForgeToken
from jobs.forge.github import API_VERSION, refusal
from jobs.settings import ChannelRepo, Settings

JWT_LIFETIME_S = 540  # GitHub takes at most 10 minutes
CLOCK_SKEW_S = 60  # issued a minute ago, as GitHub advises, in case the clocks differ
GITHUB_GIT_USER = "x-access-token"  # any user takes a personal token; an installation token needs this
GITLAB_GIT_USER = "oauth2"  # any user takes a personal or project token; an OAuth token needs this


def forge_token(settings: Settings, channel_repo: ChannelRepo) -> ForgeToken | None:
    """The token for `channel_repo` (None: it has no forge, or the forge has no token set)."""
    if channel_repo.forge == "gitlab":
        return ForgeToken(settings.GITLAB_TOKEN, GITLAB_GIT_USER) if settings.GITLAB_TOKEN else None
    if channel_repo.forge != "github":
        return None
    if settings.GITHUB_TOKEN:
        return ForgeToken(settings.GITHUB_TOKEN, GITHUB_GIT_USER)
    if settings.GITHUB_APP_ID is not None and settings.GITHUB_APP_PRIVATE_KEY_FILE is not None:
        assert channel_repo.repo is not None  # a forge names its repository (ChannelRepo)
        return ForgeToken(installation_token(settings, channel_repo.repo), GITHUB_GIT_USER)
    return None


def installation_token(settings: Settings, repo: str) -> str:
    """A new installation token of the GitHub App for `repo` ("owner/name")."""
    assert settings.GITHUB_APP_ID is not None and settings.GITHUB_APP_PRIVATE_KEY_FILE is not None
    try:
        key = settings.GITHUB_APP_PRIVATE_KEY_FILE.read_text()
    except OSError as error:
        raise ForgeRefused(f"the GitHub App's private key cannot be read ({error.strerror})") from None
    now = int(time.time())
    claims = {"iat": now - CLOCK_SKEW_S, "exp": now + JWT_LIFETIME_S, "iss": str(settings.GITHUB_APP_ID)}
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
    try:
        headers["Authorization"] = f"Bearer {jwt.encode(claims, key, algorithm='RS256')}"
    except (ValueError, TypeError) as error:
        raise ForgeRefused(f"the GitHub App's private key is not an RSA key in PEM ({error})") from None
    try:
        with httpx.Client(
            base_url=settings.GITHUB_API_URL.rstrip("/"), timeout=TIMEOUT_S, headers=headers
        ) as api:
            installation = _json(api.get(f"/repos/{repo}/installation"), repo)
            minted = _json(api.post(f"/app/installations/{installation['id']}/access_tokens"), repo)
    except httpx.HTTPError as error:
        raise ForgeRefused(f"the forge could not be reached ({type(error).__name__})") from None
    return str(minted["token"])


def _json(answer: httpx.Response, repo: str) -> dict[str, object]:
    if not answer.is_success:
        if answer.status_code == 404:
            raise ForgeRefused(f"the GitHub App is not installed on {repo}")
        if answer.status_code == 401:
            raise ForgeRefused(
                "the forge refused the GitHub App's signature: check GITHUB_APP_ID and its private key"
            )
        raise ForgeRefused(refusal(answer, repo))
    found: dict[str, object] = answer.json()
    return found

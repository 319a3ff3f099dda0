"""The client of a forge's repository: GitHub's or GitLab's, at the API URL settings give."""

from __future__ import annotations

from typing import Literal

from jobs.forge.api import Forge, ForgeToken
from jobs.forge.github import GitHub
from jobs.forge.gitlab import GitLab
from jobs.settings import Settings


def open_forge(
    settings: Settings, forge: Literal["github", "gitlab"], repo: str, token: ForgeToken | None
) -> Forge:
    secret = token.secret if token else None
    if forge == "gitlab":
        return GitLab(settings.GITLAB_API_URL, secret, repo)
    return GitHub(settings.GITHUB_API_URL, secret, repo)

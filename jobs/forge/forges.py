"""The forge client for a channel's repository: GitHub's or GitLab's, at the API URL settings give."""

from __future__ import annotations

from jobs.forge.api import Forge, ForgeToken
from jobs.forge.github import GitHub
from jobs.forge.gitlab import GitLab
from jobs.settings import ChannelRepo, Settings


def open_forge(settings: Settings, channel_repo: ChannelRepo, token: ForgeToken | None) -> Forge:
    assert channel_repo.repo is not None  # a forge names its repository (ChannelRepo)
    secret = token.secret if token else None
    if channel_repo.forge == "gitlab":
        return GitLab(settings.GITLAB_API_URL, secret, channel_repo.repo)
    return GitHub(settings.GITHUB_API_URL, secret, channel_repo.repo)

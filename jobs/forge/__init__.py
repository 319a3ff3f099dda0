"""Pull requests from a thread (`open_pull_request`): the worker, never the sandbox, turns the
session's workspace into a commit on `threadline/<thread>`, pushes it with the forge's token and
opens or updates the pull request through the forge's REST API.

- `git`: git run with a clean configuration and no hooks, the token given to one command.
- `branch`: the workspace's files as a commit on the thread's branch, and its push.
- `github`: GitHub's pulls and status API; `tokens`: GITHUB_TOKEN or a GitHub App's token.
- `pull_requests`: the tool's port (agent.tools.builtin.pull_request): preview and publish.
- `record`: the thread's pull request in Redis and its card; `ci_watch`: the card's CI line.
"""

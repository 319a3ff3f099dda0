"""Local stand-ins for Slack used by the sandbox and the tests: same code paths, no workspace."""

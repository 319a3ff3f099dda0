"""Notices as Slack sees them: Block Kit payloads, Markdown split within Slack's limits."""

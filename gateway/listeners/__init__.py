"""Bolt listeners, one module per kind of thing Slack sends."""

"""Bolt listeners, one module per kind of thing Slack sends.

Each public module exposes `register(app, deps)`, and gateway.app calls every one of them. The
`_` modules are what those listeners share: the path a message takes to a session (`_inbound`),
the controls, skill words, and edits or deletes of waiting input.
"""

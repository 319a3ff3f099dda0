"""A session's state in Redis: meta, wire log, inbox, outbox, lease, approvals, dedupe."""

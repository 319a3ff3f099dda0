"""Sub-agents on RQ: child sessions, parked steps waiting for them, swarms, nested progress,
cancel propagation and the workspace write lock."""

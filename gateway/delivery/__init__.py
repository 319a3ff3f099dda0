"""Delivery (queue `slack`): a session's outbox posted to its thread, in order, once.

RQ stores a job's function by dotted name, so deliveries queued before the package existed
name `gateway.delivery.deliver`; it resolves here, lazily, so importing a part of this package
never imports the whole delivery job.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "deliver":
        from gateway.delivery.job import deliver

        return deliver
    raise AttributeError(name)

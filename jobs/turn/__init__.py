"""The turn job (queue `turns`) and what it hands the agent loop: sink, tools, progress.

RQ stores a job's function by dotted name, so turns queued before the package existed name
`jobs.turn.run_turn`; it resolves here, lazily, so importing a part of this package never
imports the whole turn runner.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "run_turn":
        from jobs.turn.runner import run_turn

        return run_turn
    raise AttributeError(name)

"""The agent loop (docs/context-core.md, "Loop"): steps, the in-turn context keeper, turn ports."""

from agent.loop._stopping import TurnStopped
from agent.loop.turn_loop import Loop, LoopConfig

__all__ = ["Loop", "LoopConfig", "TurnStopped"]

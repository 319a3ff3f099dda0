"""The agent loop (docs/context-core.md, "Loop"): steps, the in-turn context keeper, turn ports."""

from agent.loop.turn_loop import Loop, LoopConfig, TurnStopped

__all__ = ["Loop", "LoopConfig", "TurnStopped"]

"""The Agent tools' launcher on Redis and RQ: each sub-agent is a session with its own turn jobs.

Nothing here waits for a sub-agent. A foreground call registers its wait before its child
is enqueued, so an answer can never arrive for a call nobody waits for; a swarm starts at
most `swarm_concurrency` items now and each item that ends starts the next one.
"""

from __future__ import annotations

from agent.delegation.launcher import Spawned, SpawnRequest, SwarmRequest
from jobs.delegation.spawning import Lineage, launch_child, plan_child
from jobs.delegation.swarms import Swarm
from jobs.delegation.waits import StepWaits
from jobs.session.store import SessionStore


class RedisLauncher:
    def __init__(self, store: SessionStore, *, turn_timeout_s: int, swarm_concurrency: int) -> None:
        self.store = store
        self.turn_timeout_s = turn_timeout_s
        self.swarm_concurrency = swarm_concurrency

    def spawn(self, request: SpawnRequest) -> Spawned:
        redis = self.store.redis
        parent = Lineage.of(self.store)
        planned = plan_child(redis, parent, request.child, request.tool_call_id, None)
        if not request.background:
            StepWaits(self.store).expect(request.tool_call_id)
        launch_child(
            redis,
            parent,
            planned,
            request.child,
            call_id=request.tool_call_id,
            mode="background" if request.background else "foreground",
            turn_timeout_s=self.turn_timeout_s,
        )
        return Spawned(planned.agent_id)

    def spawn_swarm(self, request: SwarmRequest) -> list[Spawned]:
        parent = Lineage.of(self.store)
        planned = [
            plan_child(self.store.redis, parent, child, request.tool_call_id, index)
            for index, child in enumerate(request.children)
        ]  # refuses an unknown or busy resumed agent before anything starts
        StepWaits(self.store).expect(request.tool_call_id)
        swarm = Swarm(self.store, request.tool_call_id)
        swarm.create(request)
        for _ in range(self.swarm_concurrency):
            if not swarm.start_next(self.turn_timeout_s):
                break
        return [Spawned(child.agent_id) for child in planned]

"""The Agent tools' launcher on Redis and RQ: each sub-agent is a session with its own turn jobs.

Nothing here waits for a sub-agent. A foreground call registers its wait before its child
is enqueued, so an answer can never arrive for a call nobody waits for; a swarm starts at
most `swarm_concurrency` items now and each item that ends starts the next one. The quotas
on sub-agents (jobs.delegation.limits) are checked before anything starts.
"""

from __future__ import annotations

from agent.delegation.launcher import Spawned, SpawnRequest, SwarmRequest
from jobs.delegation.limits import SubagentLimits, alive_room, check_swarm_size, count_started
from jobs.delegation.spawning import Lineage, launch_child, plan_child
from jobs.delegation.swarms import Swarm
from jobs.delegation.waits import StepWaits
from jobs.session.store import SessionStore


class RedisLauncher:
    def __init__(
        self, store: SessionStore, *, turn_timeout_s: int, swarm_concurrency: int, limits: SubagentLimits
    ) -> None:
        self.store = store
        self.turn_timeout_s = turn_timeout_s
        self.swarm_concurrency = swarm_concurrency
        self.limits = limits

    def spawn(self, request: SpawnRequest) -> Spawned:
        redis = self.store.redis
        parent = Lineage.of(self.store)
        planned = plan_child(redis, parent, request.child, request.tool_call_id, None)
        with alive_room(redis, self.limits, parent.root, 1):
            count_started(self.store, self.limits, 1)
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
        check_swarm_size(self.limits, len(request.children))
        planned = [
            plan_child(self.store.redis, parent, child, request.tool_call_id, index)
            for index, child in enumerate(request.children)
        ]  # refuses an unknown or busy resumed agent before anything starts
        at_once = min(len(planned), self.swarm_concurrency)
        with alive_room(self.store.redis, self.limits, parent.root, at_once):
            count_started(self.store, self.limits, len(planned))
            StepWaits(self.store).expect(request.tool_call_id)
            swarm = Swarm(self.store, request.tool_call_id)
            swarm.create(request)
            for _ in range(self.swarm_concurrency):
                if not swarm.start_next(self.turn_timeout_s):
                    break
        return [Spawned(child.agent_id) for child in planned]

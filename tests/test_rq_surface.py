"""RQ is used through its public API (issue 30, docs/turn-worker.md 2.9 and 2.11).

What fails this test: a private name of RQ's (an attribute or method starting with `_` that
RQ defines and we do not) read, written or overridden anywhere in our code, and an `rq:` key
written by hand in our Python or Lua. Today's uses are listed in `ALLOWED`, each a step of
docs/turn-worker.md still to take; the list may only shrink: an entry no longer found fails too,
so whoever removes a use removes its entry (it is empty now). The pin's upper bound is checked
against the RQ the suite runs. The RQ adapter (gateway.processes.concurrent_worker) overrides
exactly the methods of docs/turn-worker.md 2.9, and the signatures of those methods and of the
public bookkeeping methods its async perform calls are recorded: an RQ patch release that changes
one fails here before it fails a deploy. A mention's claim of its turn (jobs/input.lua) is
watched on Redis itself: it names no key of RQ's, whose job RQ's own enqueue writes.
"""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import rq
from packaging.specifiers import SpecifierSet
from redis import Redis
from rq import Queue, SimpleWorker
from rq.job import Job

from gateway.processes.concurrent_worker import ConcurrentWorker
from jobs.input import TurnClaimed, claim_input
from jobs.keys import SessionKey, turn_queued_key
from jobs.queues import enqueue_turn, turn_job_id
from jobs.session.state import PARKED_STATES
from jobs.session.user_input import UserInput

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ["agent", "jobs", "gateway", "bench", "tests"]
RQ_KEY = re.compile(r"""["']rq:""")

# (file, private name or "rq:"): how many uses today. Each goes with a step of turn-worker.md.
ALLOWED: Counter[tuple[str, str]] = Counter()


def _python_files() -> list[Path]:
    return sorted(path for folder in SCANNED for path in (ROOT / folder).rglob("*.py"))


def _private_names_defined(tree: ast.AST) -> set[str]:
    """`_x` (not dunder) defined as a method, or assigned as `self._x`, in a module."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _rq_private_names() -> set[str]:
    source = Path(rq.__file__).parent
    return set().union(
        *(_private_names_defined(ast.parse(path.read_text())) for path in source.rglob("*.py"))
    )


def _uses(path: Path, private: set[str]) -> Counter[str]:
    """The RQ-private names `path` touches: attribute access, a method override, an annotation."""
    tree = ast.parse(path.read_text())
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            found[node.attr] += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in private:
            found[node.name] += 1
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in private
        ):
            found[node.target.id] += 1
    return found


def test_rq_is_used_through_its_public_names_and_no_key_is_written_by_hand():
    files = _python_files()
    ours = set().union(*(_private_names_defined(ast.parse(path.read_text())) for path in files))
    rq_only = _rq_private_names() - ours  # a name both define is ours where we use it
    rq_only |= {"_shutdown", "_stop_requested", "_shutdown_requested_date"}  # ours only as overrides of RQ's
    found: Counter[tuple[str, str]] = Counter()
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        if relative == "tests/test_rq_surface.py":
            continue
        for name, count in _uses(path, rq_only).items():
            found[(relative, name)] += count
    for path in [*files, *(ROOT / "jobs").rglob("*.lua")]:
        relative = path.relative_to(ROOT).as_posix()
        if relative != "tests/test_rq_surface.py" and (count := len(RQ_KEY.findall(path.read_text()))):
            found[(relative, "rq:")] += count
    assert found == ALLOWED, (
        "RQ's private names and hand-written rq: keys changed; new: "
        f"{dict(found - ALLOWED)}, gone (remove them from ALLOWED): {dict(ALLOWED - found)}"
    )


LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical", "log"}


def _log_templates(tree: ast.AST) -> set[str]:
    """The message strings a module passes to a logger (`log.info("...", …)`)."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in LOG_CALLS
        ):
            found |= {
                arg.value
                for arg in node.args[:2]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            }
    return {template for template in found if len(template) > 12}  # not "%s", not a level name


def test_no_code_of_ours_matches_rqs_log_templates():
    """A filter on RQ's message templates (as QuietRqJobLines was) breaks silently when RQ rewords
    a line: RQ's logger is set by level only (gateway.processes.logs)."""
    source = Path(rq.__file__).parent
    templates = set().union(*(_log_templates(ast.parse(path.read_text())) for path in source.rglob("*.py")))
    assert "Successfully completed %s job in %ss on worker %s" in templates  # the scan sees RQ's lines
    ours = [path for folder in ["agent", "jobs", "gateway"] for path in (ROOT / folder).rglob("*.py")]
    matches = {
        (path.relative_to(ROOT).as_posix(), node.value)
        for path in ours
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in templates
    }
    assert not matches


def test_the_pin_admits_the_rq_the_suite_runs_and_no_later_minor_release():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [pin] = [SpecifierSet(spec[2:]) for spec in dependencies if re.match(r"rq\s*[<>=~!]", spec)]
    major, minor = (int(part) for part in rq.__version__.split(".")[:2])
    assert rq.__version__ in pin
    assert f"{major}.{minor + 1}.0" not in pin, f"rq {pin} admits a minor release the suite never ran"


def _commands_while(redis: Redis, act: Callable[[], object]) -> list[str]:
    """Every command Redis ran in this test's database while `act` ran, its scripts' own
    commands included (MONITOR shows those too)."""
    db = redis.connection_pool.connection_kwargs.get("db", 0)
    done = f"done-{uuid.uuid4().hex}"
    commands = []
    with redis.monitor() as monitor:
        act()
        redis.echo(done)  # already sent: reading up to it cannot wait on anything else
        while done not in (seen := monitor.next_command())["command"]:
            if seen["db"] == db:
                commands.append(seen["command"])
    return commands


def test_a_mention_claims_its_turn_naming_no_rq_key_and_rq_enqueues_its_job(redis: Redis):
    rq_keys = (Job.redis_job_namespace_prefix, Queue.redis_queue_namespace_prefix, Queue.redis_queues_keys)
    key = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")
    said = UserInput(text="hello", user="U1", ts=key.thread_ts)
    claimed: list[object] = []

    claim = _commands_while(
        redis, lambda: claimed.append(claim_input(redis, key, said, parked=PARKED_STATES))
    )

    [turn] = claimed
    assert isinstance(turn, TurnClaimed)
    assert f"SET {turn_queued_key(key)} {turn.token} NX" in " | ".join(claim)  # the script's own, seen
    assert [command for command in claim if any(name in command for name in rq_keys)] == []
    enqueue = _commands_while(redis, lambda: enqueue_turn(redis, key, turn.token, turn_timeout_s=60))
    assert any(Job.key_for(turn_job_id(turn.token)) in command for command in enqueue)


# The RQ methods the adapter overrides, each for one gap of RQ's (docs/turn-worker.md 2.9; the
# module's doc and each override's first line say which), and `__init__` for its own arguments.
OVERRIDDEN = {
    "__init__",
    "execute_job",
    "dequeue_job_and_maintain_ttl",
    "request_stop",
    "set_state",
    "request_stop_execution",
    "unsubscribe",
    "heartbeat",
}
# Signatures in rq 3.0.0: of each overridden method, and of the public methods the async perform
# and the dequeue override call.
SIGNATURES = {
    "execute_job": "(self, job: 'Job', queue: 'Queue')",
    "dequeue_job_and_maintain_ttl": (
        "(self, timeout: 'int | None', max_idle_time: 'int | None' = None) -> 'tuple[Job, Queue] | None'"
    ),
    "request_stop": "(self, signum, frame)",
    "set_state": "(self, state: 'str', pipeline: 'Pipeline | None' = None)",
    "request_stop_execution": "(self, execution_id: 'str')",
    "unsubscribe": "(self)",
    "prepare_execution": "(self, job: 'Job') -> 'Execution'",
    "prepare_job_execution": "(self, job: 'Job', remove_from_intermediate_queue: 'bool' = False) -> 'None'",
    "handle_execution_ended": "(self, job: 'Job', queue: 'Queue', heartbeat_ttl: 'int')",
    "handle_job_success": (
        "(self, job: 'Job', queue: 'Queue', started_job_registry: 'StartedJobRegistry', "
        "execution: 'Execution')"
    ),
    "handle_exception": "(self, job: 'Job', *exc_info)",
    "handle_job_failure": (
        "(self, job: 'Job', queue: 'Queue', started_job_registry=None, exc_string='', "
        "execution: 'Execution | None' = None)"
    ),
    "heartbeat": "(self, timeout: 'int | None' = None, pipeline: 'Pipeline | None' = None)",
}
JOB_SIGNATURES = {
    "perform": "(self) -> 'Any'",
    "send_webhooks": "(self, status: 'str | JobStatus', *, exc_string: 'str | None' = None) -> 'None'",
}


def test_the_adapter_overrides_exactly_the_documented_rq_methods():
    rqs = {
        name for klass in SimpleWorker.__mro__ if klass.__module__.startswith("rq.") for name in vars(klass)
    }
    overridden = {name for name in vars(ConcurrentWorker) if name in rqs} - {"__module__", "__doc__"}
    # death_penalty_class: RQ's documented setting ("Custom DeathPenalty Classes"), not a method;
    # max_connection_wait_time: the public cap of the back-off of RQ's dequeue in an outage.
    assert overridden == OVERRIDDEN | {"death_penalty_class", "max_connection_wait_time"}
    assert [klass for klass in ConcurrentWorker.__mro__ if not klass.__module__.startswith("rq.")] == [
        ConcurrentWorker,
        object,
    ], "another class of ours between the adapter and RQ's"


def test_the_rq_methods_the_adapter_overrides_and_calls_have_the_recorded_signatures():
    changed = {
        name: str(inspect.signature(getattr(SimpleWorker, name)))
        for name, recorded in SIGNATURES.items()
        if str(inspect.signature(getattr(SimpleWorker, name))) != recorded
    }
    changed |= {
        f"Job.{name}": str(inspect.signature(getattr(Job, name)))
        for name, recorded in JOB_SIGNATURES.items()
        if str(inspect.signature(getattr(Job, name))) != recorded
    }
    assert changed == {}, "RQ changed a method the adapter relies on: read the release notes, then re-record"

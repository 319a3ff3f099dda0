"""Every Prometheus metric threadline records, defined once, and the one-line calls that record them.

Both layers record here: `jobs/` (turns, the model, tools, approvals, the janitor) and `gateway/`
(Slack's requests, Slack API calls); `agent/` stays free of any metrics library and is observed
through its ports (the reporter, the retry observer, projection telemetry).

Labels are always from a small, known set: never a session, thread, team or user id, and never a
name the model or a payload chose (a tool the registry does not know is `unknown`). In a process
started with PROMETHEUS_MULTIPROC_DIR set (web's gunicorn workers, the worker supervisor's RQ
workers, the work horses of a forking worker run alone) prometheus_client keeps the values in
files there, and the scrape adds them up (`jobs.metrics_export`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from prometheus_client import Counter, Histogram
from redis.exceptions import RedisError

# Slack retries an event not answered within 3 s, so the buckets are fine below that.
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
# A model request takes from a fraction of a second to minutes (long answers, reasoning).
MODEL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# A turn runs seconds to TURN_TIMEOUT_SECONDS (an hour by default).
TURN_BUCKETS = (0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
STEP_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100)  # MAX_STEPS_PER_TURN is 50 by default
TOOL_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0)
# People decide within minutes, or the call waits up to APPROVAL_TIMEOUT_SECONDS (a day).
APPROVAL_BUCKETS = (10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0)
# Slack's error codes are short snake_case words; anything else (a proxy's page) is "other".
SLACK_ERROR_CODE = re.compile(r"[a-z0-9_]{1,48}")
OTHER = "other"

# -- web: Slack's requests ---------------------------------------------------------------------

REQUEST_SECONDS = Histogram(
    "threadline_slack_request_seconds",
    "Time web took to answer Slack's request (the ack), by kind",
    ["kind"],
    buckets=ACK_BUCKETS,
)
INPUTS = Counter(
    "threadline_inputs_total",
    "People's messages to the agent: recorded, deduplicated (a delivery seen before), refused (a quota)"
    " or ignored (a reply in a thread without a session)",
    ["result"],
)

# -- turns -------------------------------------------------------------------------------------

TURNS_STARTED = Counter("threadline_turns_started_total", "Turn runs a worker started (the loop ran)")
TURNS_FINISHED = Counter(
    "threadline_turns_finished_total", "Turn runs that ended, by outcome (agent ENDINGS keys)", ["outcome"]
)
TURN_SECONDS = Histogram(
    "threadline_turn_seconds", "How long a turn run took, by outcome", ["outcome"], buckets=TURN_BUCKETS
)
TURN_STEPS = Histogram("threadline_turn_steps", "Model steps per turn run", buckets=STEP_BUCKETS)

# -- the model ---------------------------------------------------------------------------------

MODEL_SECONDS = Histogram(
    "threadline_model_request_seconds",
    "One model request (an attempt), by outcome: ok or the error's kind",
    ["outcome"],
    buckets=MODEL_BUCKETS,
)
MODEL_FIRST_TOKEN = Histogram(
    "threadline_model_first_token_seconds",
    "From sending a model request to its first streamed text or tool call",
    buckets=MODEL_BUCKETS,
)
MODEL_RETRIES = Counter("threadline_model_retries_total", "Model requests retried, by cause", ["cause"])
MODEL_TOKENS = Counter(
    "threadline_model_tokens_total", "Tokens the model reported, by kind: input, output, cached", ["kind"]
)

# -- tools, approvals, unknown results -----------------------------------------------------------

TOOL_CALLS = Counter(
    "threadline_tool_calls_total", "Tool calls with a result, by tool and outcome", ["tool", "outcome"]
)
TOOL_SECONDS = Histogram(
    "threadline_tool_call_seconds",
    "From the start of a tool batch to this call's result, by tool",
    ["tool"],
    buckets=TOOL_BUCKETS,
)
UNKNOWN_RESULTS = Counter(
    "threadline_unknown_results_total", "Tool calls whose worker died before their result (never re-run)"
)
APPROVALS = Counter("threadline_approvals_total", "Approval requests decided, by decision", ["decision"])
APPROVAL_WAIT = Histogram(
    "threadline_approval_wait_seconds",
    "How long a call waited for its decision, by decision",
    ["decision"],
    buckets=APPROVAL_BUCKETS,
)
PROJECTION_REPAIRS = Counter(
    "threadline_projection_repairs_total",
    "Repairs of a model request's history (each new one a loop reports), by kind",
    ["kind"],
)

# -- Slack's Web API and Redis ---------------------------------------------------------------------

SLACK_CALLS = Counter(
    "threadline_slack_api_calls_total", "Slack Web API calls, by method and error (ok)", ["method", "error"]
)
SLACK_RATE_LIMITED = Counter(
    "threadline_slack_rate_limited_total", "Slack answers HTTP 429, by method", ["method"]
)
SLACK_RETRY_AFTER = Counter(
    "threadline_slack_retry_after_seconds_total",
    "Seconds spent waiting for Slack's Retry-After, by method",
    ["method"],
)
REDIS_ERRORS = Counter(
    "threadline_redis_errors_total", "Redis errors that stopped a piece of work, by where", ["where"]
)
UNREPLICATED_ACKS = Counter(
    "threadline_unreplicated_acks_total",
    "Slack requests answered 503 because too few replicas held their input in time",
)


# jobs.input's words for what became of an input, as the metric counts them.
INPUT_RESULTS = {
    "wire": "recorded",
    "inbox": "recorded",
    "held": "recorded",
    "duplicate": "deduplicated",
    "no session": "ignored",
}


def input_recorded(result: str) -> None:
    """`result`: jobs.input's Recorded word, or "refused"."""
    INPUTS.labels(INPUT_RESULTS.get(result, result)).inc()


def turn_started() -> None:
    TURNS_STARTED.inc()


def turn_finished(outcome: str, seconds: float, steps: int) -> None:
    TURNS_FINISHED.labels(outcome).inc()
    TURN_SECONDS.labels(outcome).observe(seconds)
    TURN_STEPS.observe(steps)


def model_retried(cause: str, _delay_s: float) -> None:
    MODEL_RETRIES.labels(cause).inc()


def tool_finished(tool: str, outcome: str, seconds: float | None, known: Collection[str]) -> None:
    name = tool if tool in known else "unknown"
    TOOL_CALLS.labels(name, outcome).inc()
    if seconds is not None:
        TOOL_SECONDS.labels(name).observe(seconds)


def approval_decided(decision: str, waited_s: float | None) -> None:
    APPROVALS.labels(decision).inc()
    if waited_s is not None:
        APPROVAL_WAIT.labels(decision).observe(max(0.0, waited_s))


def projection_repaired(_event: str, fields: dict[str, object]) -> None:
    """agent.projection.report's telemetry: the counts of each kind of repair."""
    for kind, count in fields.items():
        if isinstance(count, int) and count > 0:
            PROJECTION_REPAIRS.labels(kind).inc(count)


def slack_called(method: str, error: str | None) -> None:
    code = "ok" if error is None else error if SLACK_ERROR_CODE.fullmatch(error) else OTHER
    SLACK_CALLS.labels(method, code).inc()


def slack_rate_limited(method: str, waited_s: float) -> None:
    SLACK_RATE_LIMITED.labels(method).inc()
    SLACK_RETRY_AFTER.labels(method).inc(waited_s)


def redis_error(where: str) -> None:
    REDIS_ERRORS.labels(where).inc()


def redis_error_if(error: BaseException, where: str) -> None:
    """Counts `error` when Redis raised it (a loop that catches everything calls this)."""
    if isinstance(error, RedisError):
        redis_error(where)

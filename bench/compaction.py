"""How long `compute_compact_count` takes, and how long a turn takes to load its history.

    python -m bench.compaction [--redis redis://127.0.0.1:6379/14]

1. `compute_compact_count` on 10,000 synthetic messages (bench.history), window 256,000, auto
   source; median of 30 runs. "cold" builds fresh message objects before each run, so no
   estimate is memoised; "warm" reuses one history whose estimates are already cached. The
   reference TypeScript takes about 9–16 ms cold.
2. Starting a turn (`jobs.session.history.load_fold`) on sessions of 1,000, 10,000 and 50,000 wire
   entries, with and without a compaction checkpoint (which leaves a 200-entry tail to fold).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from redis import Redis

from agent.compaction.rules import compute_compact_count
from agent.fold import fold
from agent.messages import Message
from agent.tokens import estimate_message
from agent.wire import AppendLoopEvent, AppendMessage, ApplyCompaction, ContentPartEvent, StepBegin, StepEnd
from bench.history import make_history
from jobs.keys import SessionKey
from jobs.session.history import checkpoint_key, load_fold, save_checkpoint
from jobs.session.store import RECORD_FIELD, SessionStore, encode_record

LOG_SIZES = (1_000, 10_000, 50_000)
TAIL_ENTRIES = 200
LOAD_RUNS = 7

N_MESSAGES = 10_000
WINDOW = 256_000
RUNS = 30


def _timed(history: list[Message]) -> tuple[float, int]:
    start = time.perf_counter()
    count = compute_compact_count(history, "auto", WINDOW)
    return (time.perf_counter() - start) * 1000, count


def _median_ms(histories: Callable[[], list[Message]]) -> tuple[float, int]:
    runs = [_timed(histories()) for _ in range(RUNS)]
    return statistics.median(ms for ms, _ in runs), runs[0][1]


def _turn_records(n: int) -> list:
    step = f"s{n}"
    return [
        AppendMessage(message=make_history(1, seed=n)[0]),
        AppendLoopEvent(event=StepBegin(uuid=step)),
        AppendLoopEvent(
            event=ContentPartEvent(step_uuid=step, part={"type": "text", "text": f"answer {n} " * 20})
        ),
        AppendLoopEvent(event=StepEnd(uuid=step, finish_reason="stop")),
    ]


def _write(store: SessionStore, records: list) -> None:
    pipe = store.redis.pipeline(transaction=False)
    for record in records:
        pipe.xadd(store.wire_key, {RECORD_FIELD: encode_record(record)})
    pipe.execute()


def _session(redis: Redis, entries: int) -> SessionStore:
    store = SessionStore(redis, SessionKey(team="TB", channel="CB", thread_ts=f"{entries}.000001"))
    redis.delete(store.wire_key, checkpoint_key(store))
    records = [record for n in range(entries // 4) for record in _turn_records(n)]
    _write(store, records[: entries - TAIL_ENTRIES])
    history = fold(store.read_wire())
    compacted = len(history) - 20
    summary = ApplyCompaction(summary="s", context_summary="summary", compacted_count=compacted)
    record_id = store.append(summary)
    save_checkpoint(store, fold([summary.model_dump()], history), record_id)
    _write(store, records[entries - TAIL_ENTRIES :])
    return store


def _load_ms(store: SessionStore, checkpoint: bytes | None) -> float:
    if checkpoint is None:
        store.redis.delete(checkpoint_key(store))
    else:
        store.redis.set(checkpoint_key(store), checkpoint)
    runs = []
    for _ in range(LOAD_RUNS):
        start = time.perf_counter()
        load_fold(store)
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def load_times(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    print(f"\nstarting a turn: load_fold, median of {LOAD_RUNS} runs")
    print(f"(the checkpoint leaves a {TAIL_ENTRIES}-entry tail to fold)")
    print(f"{'wire entries':>14}{'whole log (ms)':>18}{'checkpoint + tail (ms)':>26}")
    for entries in LOG_SIZES:
        store = _session(redis, entries)
        checkpoint = redis.get(checkpoint_key(store))
        whole = _load_ms(store, None)
        with_checkpoint = _load_ms(store, checkpoint)
        print(f"{entries:>14,}{whole:>18.1f}{with_checkpoint:>26.1f}")
        redis.delete(store.wire_key, checkpoint_key(store))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    count_times()
    load_times(args.redis)


def count_times() -> None:
    warm_history = make_history(N_MESSAGES)
    total = sum(estimate_message(message) for message in warm_history)
    cold_ms, count = _median_ms(lambda: make_history(N_MESSAGES))
    warm_ms, _ = _median_ms(lambda: warm_history)
    print(f"history: {N_MESSAGES} messages, {total} estimated tokens, window {WINDOW}, auto source")
    print(f"compute_compact_count -> n = {count} (keeps {N_MESSAGES - count})")
    print(f"cold (fresh objects, no memoised estimates): median {cold_ms:.2f} ms over {RUNS} runs")
    print(f"warm (estimates memoised on the objects):    median {warm_ms:.2f} ms over {RUNS} runs")
    print("reference TypeScript: about 9-16 ms cold")


if __name__ == "__main__":
    main()

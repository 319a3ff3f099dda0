"""How long `compute_compact_count` takes on a long history.

    python -m bench.compaction

10,000 synthetic messages (bench.history), window 256,000, auto source; median of 30 runs.
"cold" builds fresh message objects before each run, so no estimate is memoised; "warm" reuses
one history whose estimates are already cached. The reference TypeScript takes about 9–16 ms cold.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from agent.compaction_rules import compute_compact_count
from agent.messages import Message
from agent.tokens import estimate_message
from bench.history import make_history

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


def main() -> None:
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

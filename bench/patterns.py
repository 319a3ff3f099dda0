"""How each regular expression of the product grows with hostile text: `python -m bench.patterns`.

Every module-level compiled pattern of `agent`, `jobs` and `gateway` (the sandbox's fakes left
out) is run (`search`, `findall`, `sub`) over each of SHAPES repeated to SMALL and to LARGE
characters. A pattern whose time grows with the text's length (LARGE / SMALL = 4 here) is linear;
one that grows with its square (16) or worse scans from each position, and a person's message, a
tool's output or a server's schema could hold a worker with it. Prints the slowest shape of each
pattern that is not linear, its growth and its time; a pattern that takes longer than CUT_S on the
large text is stopped and shown as such.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import signal
import time
from collections.abc import Iterator
from types import FrameType

PACKAGES = ("agent", "jobs", "gateway")
LEFT_OUT = ("gateway.sandbox",)  # fakes for tests and the demo, not the product's path
SMALL, LARGE = 10_000, 40_000
CUT_S = 2.0
ROUNDS = 3
NOTICED_S = 0.05  # below this on the large text, growth is noise (a quadratic one takes seconds)
LINEAR_GROWTH = LARGE / SMALL
SHAPES = (
    "a", "a.", "a ", " ", "\n", "\t", "ab", "1.", "-a", ":a", "a:", "a/", "x-", "*", "_", "*a", "_a", "**",
    "`", "```", "~", "\\", "#", ">", "|", "&", "@", "<", "<@", "<!", "<http", "[a](", "a\n", " \n",
)  # fmt: skip


class TooSlow(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise TooSlow


def patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for found in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            if found.name.startswith(LEFT_OUT):
                continue
            module = importlib.import_module(found.name)
            for name, value in vars(module).items():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    yield f"{found.name}.{name}", value


def seconds(pattern: re.Pattern[str], text: str) -> float:
    """The fastest of ROUNDS runs (a pause of the machine's is not the pattern's)."""
    fastest = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, CUT_S)
        try:
            pattern.search(text)
            pattern.findall(text)
            pattern.sub("", text)
        except TooSlow:
            return float("inf")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main() -> None:
    signal.signal(signal.SIGALRM, _stop)
    checked = slow = 0
    for where, pattern in patterns():
        checked += 1
        worst = (0.0, 0.0, "")
        for unit in SHAPES:
            for tail in ("", "!\x00"):
                small = seconds(pattern, unit * (SMALL // len(unit)) + tail)
                large = seconds(pattern, unit * (LARGE // len(unit)) + tail)
                growth = large / max(small, 1e-6)
                if large > NOTICED_S and growth > worst[0]:
                    worst = (growth, large, repr(unit) + (" + end" if tail else ""))
        if worst[0] > 2 * LINEAR_GROWTH:
            slow += 1
            took = "over the cut" if worst[1] == float("inf") else f"{worst[1]:.3f} s"
            print(f"{where}: grows {worst[0]:.0f}x for {LINEAR_GROWTH:.0f}x the text ({worst[2]}; {took})")
    sizes = f"{len(SHAPES)} shapes of {SMALL:,} and {LARGE:,} characters"
    print(f"{checked} patterns over {sizes}: {slow} not linear")


if __name__ == "__main__":
    main()

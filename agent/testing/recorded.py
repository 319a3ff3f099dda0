"""Providers' answers as their documentation shows them, replayed by `FakeLLM` byte for byte.

`agent/testing/providers/<name>.json` holds, per provider, the shape of each answer a client
must read (a thinking answer with parallel tool calls, a final answer streamed and whole, a
length cut, the errors for an overflow, a rate limit and a used-up quota), with fixed content
(`list_dir` of "." and "docs", "All done.") so a test can check it; `facts` says what the
provider documents and `sources` where. Each answer was written from the provider's public
documentation; where it is silent the file says so.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from agent.testing.fake_model import Reply

FOLDER = Path(__file__).with_name("providers")
PROVIDERS = sorted(path.stem for path in FOLDER.glob("*.json"))


@cache
def provider(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FOLDER / f"{name}.json").read_text())
    return loaded


def recorded(name: str, answer: str) -> Reply:
    """`name`'s recorded `answer`, as the fake model's next reply."""
    shape = provider(name)["answers"][answer]
    headers = dict(shape.get("headers") or {})
    if "sse" in shape:
        body = "".join(f"{line}\n\n" for line in shape["sse"]).encode()
        headers.setdefault("Content-Type", "text/event-stream")
    else:
        body = json.dumps(shape["json"]).encode()
        headers.setdefault("Content-Type", "application/json")
    return Reply(status=shape["status"], raw_body=body, headers=headers)


def has(name: str, answer: str) -> bool:
    return answer in provider(name)["answers"]

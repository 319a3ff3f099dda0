"""Test doubles shipped at the seam they fake: an OpenAI-compatible model server over HTTP.

`FakeLLM` validates each request as providers do and answers from a script of `Reply`s
(`text(...)`, `calls(...)` build the common ones). `LocalServer` and `QuietHandler` are what
every local HTTP fake shares, the gateway's fake Slack included.
"""

from agent.testing._local_http import LocalServer, QuietHandler
from agent.testing.fake_model import FakeLLM, Reply, calls, text

__all__ = ["FakeLLM", "LocalServer", "QuietHandler", "Reply", "calls", "text"]

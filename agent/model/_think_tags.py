"""Reasoning a model writes into its answer as `<think>…</think>` (a model served without a
reasoning parser: vLLM, Ollama, Groq's `raw` format) is taken out of the text, so it is never
posted: what is inside the tags becomes reasoning, the rest stays the answer. Only a leading
block counts (after optional whitespace), as these models write it; a tag later in an answer
is the answer's own text. Streamed, a tag may be cut anywhere across chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

OPEN, CLOSE = "<think>", "</think>"


@dataclass
class ThinkTags:
    """Feed the content as it arrives; `feed` returns the part that is the answer's text."""

    reasoning: list[str] = field(default_factory=list)
    found: bool = False  # a leading <think> block was seen
    _state: str = "start"  # start → think → text
    _held: str = ""  # text that may still turn out to be (part of) a tag
    _after: bool = False  # just past the block: the answer's leading blank lines are dropped

    def feed(self, piece: str) -> str:
        self._held += piece
        if self._state == "start":
            lead = self._held.lstrip()
            if OPEN.startswith(lead):  # "", "<", "<thi": not decided yet
                return ""
            if not lead.startswith(OPEN):
                self._state = "text"
                return self._release()
            self.found, self._state, self._held = True, "think", lead[len(OPEN) :]
        if self._state == "think":
            end = self._held.find(CLOSE)
            if end < 0:
                keep = _partial_tail(self._held, CLOSE)
                self.reasoning.append(self._held[: len(self._held) - keep])
                self._held = self._held[len(self._held) - keep :]
                return ""
            self.reasoning.append(self._held[:end])
            self._state, self._held, self._after = "text", self._held[end + len(CLOSE) :], True
        return self._release()

    def finish(self) -> str:
        """The end of the content: what was held back is the answer's (or, inside an unclosed
        block, the reasoning's)."""
        if self._state == "think":
            self.reasoning.append(self._held)
            self._held = ""
            return ""
        return self._release()

    def _release(self) -> str:
        text, self._held = self._held, ""
        if self._after:
            text = text.lstrip()
            self._after = not text
        return text


def split_think_tags(content: str) -> tuple[str | None, str]:
    """A whole answer's (reasoning or None, text)."""
    tags = ThinkTags()
    text = tags.feed(content) + tags.finish()
    return ("".join(tags.reasoning) if tags.found else None), text


def _partial_tail(text: str, tag: str) -> int:
    """How many characters at the end of `text` could begin `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0

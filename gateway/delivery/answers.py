"""Posting an answer: Markdown in as few messages as Slack accepts, a file when it is very long.

Slack's documented limits are generous (40,000 characters of text, 12,000 of Markdown) but
`msg_too_long` can come back for a few thousand, so answers go out in chunks of
`CHUNK_CHARS`, and a chunk Slack refuses as too long is split in half and tried again (the
split is noted in the ledger, so a retried delivery splits the same way and posts nothing
twice). More than `MAX_MESSAGES` chunks become a file with the first chunk shown above it.
"""

from __future__ import annotations

from slack_sdk.errors import SlackApiError

from gateway.delivery.poster import ThreadPoster
from gateway.render.markdown import split_markdown
from gateway.render.notices import SlackMessage

CHUNK_CHARS = 3_900  # Slack advises keeping a message under 4,000 characters
MIN_CHUNK_CHARS = 400  # below this, a refusal is not about length: give up splitting
MAX_MESSAGES = 4  # beyond ~15,000 characters a thread of messages is harder to read than a file
TOO_LONG = frozenset({"msg_too_long", "msg_blocks_too_long", "invalid_blocks", "markdown_text_too_long"})
EMPTY_ANSWER = "(no answer)"


def post_answer(poster: ThreadPoster, entry: str, text: str) -> None:
    text = text if text.strip() else EMPTY_ANSWER
    chunks = split_markdown(text, CHUNK_CHARS)
    if len(chunks) <= MAX_MESSAGES:
        _post_chunks(poster, entry, chunks, CHUNK_CHARS)
        return
    _post_chunks(poster, entry, chunks[:1], CHUNK_CHARS)
    comment = f"The full answer ({len(text):,} characters) is in the attached file."
    poster.upload_once(f"{entry}:file", f"answer-{entry}.md", text, comment)


def _post_chunks(poster: ThreadPoster, entry: str, chunks: list[str], limit: int) -> None:
    for index, chunk in enumerate(chunks):
        part = f"{entry}:{index}"
        smaller = poster.ledger.note(f"{part}:split")
        if smaller:
            _post_chunks(poster, part, split_markdown(chunk, int(smaller)), int(smaller))
            continue
        try:
            poster.post_once(part, SlackMessage(markdown=chunk))
        except SlackApiError as error:
            half = limit // 2
            if error.response.get("error") not in TOO_LONG or half < MIN_CHUNK_CHARS:
                raise
            poster.ledger.set_note(f"{part}:split", str(half))
            _post_chunks(poster, part, split_markdown(chunk, half), half)

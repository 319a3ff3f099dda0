"""How every threadline process logs: one line per record, redacted (`agent.redaction`)."""

from __future__ import annotations

import logging

from agent.redaction import RedactingFormatter

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])

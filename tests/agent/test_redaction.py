"""The redaction helper: URLs without credentials, token shapes masked, error bodies summarised."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from agent.redaction import RedactingFormatter, error_codes, http_error_summary, redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:hunter2@cache.internal:6379/0", "redis://:***@cache.internal:6379/0"),
        ("redis://default:hunter2@cache:6379/0", "redis://default:***@cache:6379/0"),
        ("rediss://u:p%40ss@cache:6380", "rediss://u:***@cache:6380"),
        ("https://x-access-token:ghs_abc@github.com/o/r.git", "https://x-access-token:***@github.com/o/r.git"),
        ("https://ghp_onlyatoken@github.com/o/r.git", "https://***@github.com/o/r.git"),
        ("https://gitlab.com/o/r.git?private_token=glx&ref=main", "https://gitlab.com/o/r.git?private_token=***&ref=main"),
        ("https://h/p?X-Amz-Signature=abc&X-Amz-Credential=def", "https://h/p?X-Amz-Signature=***&X-Amz-Credential=***"),
        ("https://h/cb#access_token=abc&state=1", "https://h/cb#access_token=***&state=1"),
        ("https://h/p?q=xoxb-123456789012-abcdefabcdef", "https://h/p?q=***"),
        ("user:hunter2@cache:6379", "***@cache:6379"),
        ("api.example/v1?api_key=hunter2&v=2", "api.example/v1?api_key=***&v=2"),
    ],
)  # fmt: skip
def test_credentials_in_a_url_are_masked(url: str, shown: str):
    assert redact_url(url) == shown
    assert "hunter2" not in shown and "ghp_onlyatoken" not in shown


@pytest.mark.parametrize(
    "url",
    ["https://github.com/o/r.git", "redis://127.0.0.1:6379/15", "/srv/repos/team", "http://h/p?page=2&q=a"],
)
def test_a_url_without_credentials_is_left_exactly_as_it_was(url: str):
    assert redact_url(url) == url


def test_every_url_in_free_text_is_redacted():
    stderr = (
        "Cloning into 'x'...\nfatal: unable to access 'https://bot:s3cret@git.example/o/r.git/': 403\n"
        "fatal: repository 'http://git.example/o/r.git?access_token=s3cret2/' not found"
    )
    redacted = redact_text(stderr)
    assert "s3cret" not in redacted
    assert "'https://bot:***@git.example/o/r.git/'" in redacted
    assert "access_token=***" in redacted and redacted.startswith("Cloning into 'x'...")


def test_known_token_shapes_and_authorization_values_are_masked():
    text = (
        "token xoxb-1111-2222-abcdefABCDEF, app xapp-1-A0-123-abcdef123456, "
        "key sk-proj-abcdefghijklmnop, pat github_pat_11ABCDEFG0123456789, "
        "header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig"
    )
    redacted = redact_text(text)
    for secret in ("1111-2222", "A0-123", "proj-abcdef", "11ABCDEFG", "eyJhbGci"):
        assert secret not in redacted
    assert "xoxb-***" in redacted and "Bearer ***" in redacted


def test_a_long_dotted_run_is_redacted_in_one_pass_and_a_url_after_it_still_is():
    # Every log line goes through redact_text, and a line may quote a page, a server's error or a
    # tool's output: each word of "a.a.a…" once started a scheme scan to the run's end (quadratic:
    # 80 KB took 5 s, 2 MB hours), holding whichever thread logged it, the turns' loop included.
    run = "a." * 1_000_000
    redacted = redact_text(run + " https://bot:s3cret@git.example/x")
    assert redacted == run + " https://bot:***@git.example/x"
    glued = redact_text("x" * 40 + "https://bot:s3cret@git.example/x and snake_https://u:s3cret@h/")
    assert "s3cret" not in glued


def test_ordinary_text_is_unchanged():
    text = "task-runner failed: the risk-assessment step needs a token; see https://docs.example/x"
    assert redact_text(text) == text


def test_an_openai_style_error_body_becomes_status_and_codes_only():
    body = json.dumps(
        {
            "error": {
                "message": "Incorrect API key provided: sk-live-0123456789abcdef.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    )
    assert http_error_summary(401, body) == "HTTP 401 (invalid_api_key, invalid_request_error)"


def test_a_slack_error_body_gives_its_error_code():
    assert error_codes({"ok": False, "error": "invalid_auth", "warning": "x"}) == ["invalid_auth"]
    assert http_error_summary(200, b'{"ok": false, "error": "channel_not_found"}') == (
        "HTTP 200 (channel_not_found)"
    )


@pytest.mark.parametrize(
    "body",
    [
        "<html>502 Bad Gateway: upstream said hunter2</html>",
        '{"error": "your key hunter2 is wrong"}',
        '{"error": {"code": "xoxb-123456789012-abcdefabcdef"}}',
        '{"error": {"type": "a-b-c hunter2"}}',
        "[1, 2]",
        "",
    ],
)
def test_free_text_token_looking_or_unparsable_bodies_give_no_code(body: str):
    assert http_error_summary(500, body) == "HTTP 500"


def test_the_log_formatter_redacts_messages_and_tracebacks():
    formatter = RedactingFormatter("%(levelname)s %(message)s")
    try:
        raise ConnectionError("cannot reach redis://:hunter2@cache:6379/0")
    except ConnectionError:
        url = "redis://:hunter2@c/0"
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "using %s", (url,), None)
        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert "hunter2" not in line
    assert line.startswith("ERROR using redis://:***@c/0") and "redis://:***@cache:6379/0" in line

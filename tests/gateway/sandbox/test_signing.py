from gateway.sandbox.signing import signed_headers
from tests.slack_events import samples


def test_signature_matches_slacks_published_test_vector():
    vector = samples()["_about"]["signature_test_vector"]
    headers = signed_headers(vector["signing_secret"], vector["body"], timestamp=int(vector["timestamp"]))
    assert headers["X-Slack-Signature"] == vector["expected_signature"]
    assert headers["X-Slack-Request-Timestamp"] == vector["timestamp"]

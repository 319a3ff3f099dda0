"""A fake Slack Web API over HTTP that keeps real state and answers with Slack's error codes."""

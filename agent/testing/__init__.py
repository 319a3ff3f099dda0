"""Test doubles shipped at the seam they fake: an OpenAI-compatible model server over HTTP."""

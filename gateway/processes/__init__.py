"""The processes threadline runs: the `threadline` command, `web`, `worker`, and their helpers."""

"""The processes threadline runs: the `threadline` command (cli), `web` over HTTP (web) or
Socket Mode (socket_mode), `worker`, and their helpers (together, lifeline, cpu_priority)."""

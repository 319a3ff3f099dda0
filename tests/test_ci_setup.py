"""`.ci/run` sets up a machine that has none of what it installs (issue 29).

Each run happens in a private mount namespace where what the machine lacks is really gone
(overlays, tmpfs) and a stub apt-get, first on PATH, records every call and "installs" a package
by putting its command back: redis-server as the real binary from where it was hidden, the
others as a stub that prints a line. pytest only collects, and pip may not reach an index: these
tests are about the system packages, and reuse the checkout's .venv (an overlay keeps its writes).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"bwrap": "bubblewrap", "redis-server": "redis-server", "openssl": "openssl", "git": "git"}

# Run first in every namespace: WORK becomes a tmpfs holding the stubs and the hidden binaries.
PRELUDE = r"""
set -euo pipefail
mount -t tmpfs tmpfs "$WORK"
mkdir "$WORK/stubs" "$WORK/hidden"
cat >"$WORK/stubs/apt-get" <<'STUB'
#!/bin/bash
echo "$* DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}" >>"$APT_LOG"
[ "$1" = update ] && exit 0
for package in "${@:2}"; do
  case $package in
    -*) continue ;;
    python3*-venv) umount "$ENSUREPIP"; continue ;;
    bubblewrap) command=bwrap ;;
    redis-server | openssl | git | chromium) command=$package ;;
    *) echo "E: Unable to locate package $package" >&2; exit 100 ;;
  esac
  if [ -e "$WORK/hidden/$command" ]; then
    printf '#!/bin/sh\nexec %s "$@"\n' "$WORK/hidden/$command"
  else
    printf '#!/bin/sh\necho "%s, from the apt-get stub"\n' "$command"
  fi >"/usr/bin/$command"
  chmod +x "/usr/bin/$command"
done
STUB
chmod +x "$WORK/stubs/apt-get"
export PATH="$WORK/stubs:$PATH"
"""

# No bwrap, redis-server, openssl, git or /usr/bin/chromium: every PATH directory holding one is
# overlaid and it is removed there; so is the checkout, so that .ci/run's writes stay here.
BARE_MACHINE = r"""
cp -L "$REAL_REDIS_SERVER" "$WORK/hidden/redis-server"
overlay() {
  local layers
  layers=$(mktemp -d "$WORK/layers.XXXX")
  mkdir "$layers/upper" "$layers/work"
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$layers/upper,workdir=$layers/work" "$1"
}
overlay "$ROOT"
dirs=(/usr/bin)
IFS=: read -ra path <<<"$PATH"
for dir in "${path[@]}"; do
  for command in $COMMANDS; do [ -e "$dir/$command" ] && dirs+=("$(realpath "$dir")"); done
done
for dir in $(printf '%s\n' "${dirs[@]}" | sort -u); do
  overlay "$dir"
  for command in $COMMANDS chromium; do rm -f "$dir/$command"; done
done
"$ROOT/.ci/run" --collect-only tests/test_import_graph.py
"""

# Debian's python3 without python3-venv: no ensurepip. The project's install is up to date
# (.venv/bin/threadline newer than pyproject.toml), so make_venv stops once .venv works.
NO_ENSUREPIP = r"""
export ENSUREPIP
ENSUREPIP=$("$PYTHON" -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')
mount -t tmpfs tmpfs "$ENSUREPIP"
mkdir "$WORK/project" && cd "$WORK/project"
touch -d '1 hour ago' pyproject.toml && mkdir -p .venv/bin && touch .venv/bin/threadline
bash -ec '. "$ROOT/.ci/lib.sh"; make_venv'
.venv/bin/python -m pip --version
"""


def namespace_command() -> list[str]:
    """unshare's arguments for a private mount namespace we may mount in, or a skip."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing: no private mount namespace")
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    command = ["unshare", *user, "--mount", "--propagation", "private"]
    overlay = "mount -t overlay o -o lowerdir=l,upperdir=u,workdir=w l"
    probe = f"mount -t tmpfs t /mnt && cd /mnt && mkdir l u w && {overlay}"
    probed = subprocess.run([*command, "sh", "-c", probe], capture_output=True, timeout=10)
    if probed.returncode != 0:
        pytest.skip(
            f"cannot mount overlays in a private mount namespace here: {probed.stderr.decode().strip()}"
        )
    return command


def in_namespace(
    script: str, tmp_path: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Runs PRELUDE then `script` in a new namespace; its result and the apt-get calls."""
    work, apt_log = tmp_path / "work", tmp_path / "apt.log"
    work.mkdir()
    apt_log.touch()
    # Not the outer run's test database, pytest state or apt settings.
    outer = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "TEST_REDIS", "DEBIAN_FRONTEND"))
    }
    run = subprocess.run(
        [*namespace_command(), "bash", "-c", PRELUDE + script],
        env={
            **outer,
            "ROOT": str(ROOT),
            "WORK": str(work),
            "APT_LOG": str(apt_log),
            "PIP_NO_INDEX": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=90,
    )
    return run, apt_log.read_text().splitlines()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_ci_run_installs_what_is_missing_and_starts_its_own_redis(tmp_path: Path) -> None:
    venv_stamp = ROOT / ".venv" / "bin" / "threadline"
    if not (venv_stamp.exists() and venv_stamp.stat().st_mtime >= (ROOT / "pyproject.toml").stat().st_mtime):
        pytest.skip("the checkout's .venv is missing or older than pyproject.toml: `make test` installs it")
    real_redis_server = shutil.which("redis-server")
    if real_redis_server is None:
        pytest.skip("no redis-server binary on this machine to play the one apt installs")
    port = closed_port()

    run, apt_calls = in_namespace(
        BARE_MACHINE,
        tmp_path,
        COMMANDS=" ".join(PACKAGES),
        REAL_REDIS_SERVER=real_redis_server,
        REDIS_URL=f"redis://127.0.0.1:{port}/0",
        PYTEST_PROCESSES="0",
        SKIP_LINT="1",
    )
    output = run.stdout + run.stderr

    assert run.returncode == 0, output
    assert apt_calls.count("update -qq DEBIAN_FRONTEND=") == 1, apt_calls
    installs = [call.split() for call in apt_calls if call.startswith("install")]
    assert sorted(call[-2] for call in installs) == sorted([*PACKAGES.values(), "chromium"]), apt_calls
    assert all(call[-1] == "DEBIAN_FRONTEND=noninteractive" for call in installs), apt_calls
    assert "/usr/bin/chromium is missing: installing it with apt" in output
    assert "bwrap, from the apt-get stub" in output and "openssl, from the apt-get stub" in output
    # .ci/run prints this once the Redis it started answers a PING.
    started = re.search(r"^started redis-server on port (\d+)$", output, re.MULTILINE)
    assert started, output
    assert re.search(r"^\d+ tests? collected", output, re.MULTILINE), output
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(started[1])), timeout=1):
        pass  # .ci/run stopped its Redis at exit


def test_make_venv_installs_debians_venv_package_when_venv_fails(tmp_path: Path) -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = Path(sys.base_prefix) / "bin" / f"python{version}"  # the one this .venv was made from

    run, apt_calls = in_namespace(NO_ENSUREPIP, tmp_path, PYTHON=str(python))
    output = run.stdout + run.stderr

    assert run.returncode == 0, output
    assert f"-m venv failed: installing python{version}-venv with apt" in output
    assert apt_calls == [
        "update -qq DEBIAN_FRONTEND=",
        f"install -y -qq python{version}-venv DEBIAN_FRONTEND=noninteractive",
    ]
    assert re.search(r"^pip \S+ from ", run.stdout, re.MULTILINE), output


@pytest.mark.parametrize("sudo", [True, False], ids=["with sudo", "without sudo"])
def test_apt_install_as_a_user_goes_through_sudo(sudo: bool) -> None:
    """Not root: apt-get runs under sudo, or a line says why nothing can be installed."""
    as_user = (
        []
        if os.geteuid() != 0
        else [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    )
    with tempfile.TemporaryDirectory() as stubs:  # user 65534 reads it; tmp_path is private to root
        os.chmod(stubs, 0o755)
        scripts = {"apt-get": 'echo "apt-get $*" >&2', "sudo": 'echo "sudo $1" >&2; exec "$@"'}
        for name in ("apt-get", "sudo") if sudo else ("apt-get",):
            (Path(stubs) / name).write_text(f"#!/bin/sh\n{scripts[name]}\n")
            (Path(stubs) / name).chmod(0o755)
        for name in ("id", "env"):
            (Path(stubs) / name).symlink_to(shutil.which(name) or name)
        shutil.copy(ROOT / ".ci" / "lib.sh", stubs)
        run = subprocess.run(
            [*as_user, "/bin/bash", "-c", f". {stubs}/lib.sh; apt_install bubblewrap && apt_install git"],
            env={"PATH": stubs},
            capture_output=True,
            text=True,
            timeout=10,
        )

    if sudo:
        assert run.returncode == 0, run.stderr
        assert run.stderr.splitlines() == [
            "sudo apt-get",
            "apt-get update -qq",
            "sudo env",
            "apt-get install -y -qq bubblewrap",
            "sudo env",
            "apt-get install -y -qq git",
        ]
    else:
        assert run.returncode == 1
        assert run.stderr == "cannot install bubblewrap with apt: not root, and sudo is missing\n"

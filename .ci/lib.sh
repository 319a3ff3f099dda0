# Set-up shared by .ci/run and the Makefile (bash; source it from the checkout's root).

# apt_install PACKAGE...: as root, or through sudo; `apt-get update` at most once per run.
apt_updated=""
apt_install() {
  local sudo=""
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "cannot install $* with apt: apt-get is missing (not Debian or Ubuntu?)" >&2
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "cannot install $* with apt: not root, and sudo is missing" >&2; return 1; }
    sudo="sudo"
  fi
  if [ -z "$apt_updated" ]; then
    $sudo apt-get update -qq || return
    apt_updated=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# need COMMAND PACKAGE: installs PACKAGE with apt when COMMAND is not on PATH.
need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "$1 is missing: installing $2 with apt"
  apt_install "$2"
}

# make_venv: .venv with the project and its dev extras; pip runs again only when pyproject.toml
# is newer than the last install (.venv/bin/threadline, touched after it).
make_venv() {
  local python="${PYTHON:-python3}" package
  if [ ! -x .venv/bin/pip ] && ! "$python" -m venv .venv; then
    # Debian's python3 leaves ensurepip, which venv needs, to a package of its own.
    package="python$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
    echo "$python -m venv failed: installing $package with apt"
    apt_install "$package"
    "$python" -m venv .venv
  fi
  [ .venv/bin/threadline -nt pyproject.toml ] && return
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch .venv/bin/threadline
}

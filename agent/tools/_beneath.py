"""Opening a path beneath a directory descriptor, following only the links that stay beneath it.

`openat2(2)` with RESOLVE_BENEATH does this in the kernel, atomically, since Linux 5.6. Where it
is missing (an old kernel, a seccomp filter that refuses it), a walk does the same in user space:
every component is opened with O_NOFOLLOW from the descriptor of the one before, and a link is
read (`readlinkat`) and its target walked the same way from where it stands. Either way no
component is ever looked up by a name that was checked earlier, so a link swapped in mid-way
cannot lead out.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections import deque

_SYS_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)
_RESOLVE_NO_MAGICLINKS = 0x02  # /proc/<pid>/fd/* and friends
_RESOLVE_BENEATH = 0x08
_RACE_RETRIES = 8  # openat2 answers EAGAIN when a rename raced the lookup: try again
MAX_LINKS = 40  # what the kernel allows on one lookup (ELOOP past it)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LeavesDirectory(OSError):
    """The path, or a link on it, leads outside the directory it is opened beneath."""

    def __init__(self) -> None:
        super().__init__(errno.EXDEV, "leads outside the directory")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_kernel_resolves = True  # until openat2 says it is not there


def open_beneath(directory: int, relative: str, flags: int, mode: int = 0) -> int:
    """A descriptor of `relative` beneath the descriptor `directory`; LeavesDirectory when it, or
    a link on the way, leaves; the usual OSError otherwise (ENOENT, ENOTDIR, ELOOP …)."""
    global _kernel_resolves
    if _kernel_resolves:
        try:
            return _openat2(directory, relative, flags, mode)
        except OSError as error:
            if error.errno not in (errno.ENOSYS, errno.EPERM):
                raise
            _kernel_resolves = False
    return walk_beneath(directory, relative, flags, mode)


def _openat2(directory: int, relative: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    path = (relative or ".").encode()
    for _ in range(_RACE_RETRIES):
        fd = _libc.syscall(_SYS_OPENAT2, directory, path, ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code == errno.EXDEV:
            raise LeavesDirectory()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code), relative)
    raise OSError(errno.EAGAIN, "the path kept changing while it was opened", relative)


def walk_beneath(directory: int, relative: str, flags: int, mode: int = 0) -> int:
    """The user-space walk (see the module's docstring); public so tests run it on any kernel."""
    stack = [os.dup(directory)]  # the directories walked into, the top one last
    pending = deque(relative.split("/"))
    links = 0
    try:
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise LeavesDirectory()
                os.close(stack.pop())
                continue
            last = not any(rest not in ("", ".") for rest in pending)
            target = _link_target(stack[-1], part)
            if target is not None:
                links += 1
                if links > MAX_LINKS or target.startswith("/"):
                    raise (
                        LeavesDirectory()
                        if target.startswith("/")
                        else OSError(errno.ELOOP, "too many links")
                    )
                pending.extendleft(reversed(target.split("/")))
                continue
            if last:
                return os.open(part, flags | os.O_NOFOLLOW, mode, dir_fd=stack[-1])
            stack.append(os.open(part, _DIR_FLAGS, dir_fd=stack[-1]))
        return os.open(".", flags, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def _link_target(directory: int, name: str) -> str | None:
    """The text of the link `name`, or None when it is no link (or not there: the open says so).
    A link swapped in after this look is still never followed: the open uses O_NOFOLLOW."""
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise

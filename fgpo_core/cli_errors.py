"""The command line's user-error boundary: what counts as a user error, and its one line."""

from __future__ import annotations

import os
import sys

__all__ = ["USER_ERRORS", "one_line", "run_command"]


USER_ERRORS = (ValueError, OSError, MemoryError, EOFError)
"""What the library raises for bad input or an environment it cannot write to (every OSError: a
read-only folder, a full disk, a symlink loop, a name too long, a missing file; and running out of
memory): the command line prints one line, not a traceback."""


def _input_errors() -> tuple:
    """Errors of files that are not what they claim (a hostile pickle, a torn zip or YAML file)."""
    import pickle
    import zipfile

    extra = [pickle.UnpicklingError, zipfile.BadZipFile]
    try:
        import yaml

        extra.append(yaml.YAMLError)
    except ImportError:  # pragma: no cover - a dependency
        pass
    return tuple(extra)


def one_line(exc: BaseException) -> str:
    """The message of a user error as one line: an OS error's reason and file, else the first line
    of the message."""
    if isinstance(exc, OSError) and exc.strerror:
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return f"{where}: {exc.strerror}" if where else exc.strerror
    if isinstance(exc, MemoryError):
        return f"out of memory{': ' + str(exc) if str(exc) else ''}"
    mark = getattr(exc, "problem_mark", None)  # a YAML syntax error: its problem and where
    if mark is not None:
        return f"not valid YAML ({getattr(exc, 'problem', None) or 'syntax error'} at line {mark.line + 1})"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] + (" (...)" if len(lines) > 1 else "")


def run_command(command: str, func, *args) -> int:
    """Call ``func``; a user error becomes one line on stderr and exit status 2 (``FGPO_TRACEBACK=1``
    re-raises it, for debugging)."""
    try:
        return func(*args)
    except BrokenPipeError:  # the reader of stdout went away (``fgpo tools ... | head``): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except USER_ERRORS + _input_errors() as exc:
        if os.environ.get("FGPO_TRACEBACK"):
            raise
        print(f"fgpo {command}: {one_line(exc)}", file=sys.stderr)
        return 2

"""Run configurations as dataclasses whose fields carry docstrings, turned into command-line flags."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap

__all__ = ["field_docs", "parse_bool", "add_dataclass_args", "dataclass_from_args"]


def field_docs(cls) -> dict[str, str]:
    """The docstring written under each field of a dataclass (empty when there is none)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    out = {}
    for a, b in zip(body, body[1:] + [None]):
        if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name):
            doc = ""
            if isinstance(b, ast.Expr) and isinstance(getattr(b, "value", None), ast.Constant) \
                    and isinstance(b.value.value, str):
                doc = " ".join(b.value.value.split())
            out[a.target.id] = doc
    return out


def parse_bool(s: str) -> bool:
    """A yes/no flag's value: true/false, yes/no or 1/0 (any case); anything else is refused."""
    v = s.strip().lower()
    if v in ("1", "true", "yes"):
        return True
    if v in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {s!r}")


def add_dataclass_args(parser: argparse.ArgumentParser, cls) -> None:
    """One ``--flag`` per field (underscores become dashes), its docstring as help."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        flag = "--" + f.name.replace("_", "-")
        kind = type(default)
        # argparse %-formats help strings: a literal % in a docstring (or a default) must be doubled
        text = f"{docs.get(f.name, '')} (default {default})".replace("%", "%%")
        if kind is bool:
            parser.add_argument(flag, type=parse_bool, nargs="?", const=True, default=default, help=text)
        elif kind in (int, float, str):
            parser.add_argument(flag, type=kind, default=default, help=text)


def dataclass_from_args(cls, args: argparse.Namespace):
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in vars(args).items() if k in names})

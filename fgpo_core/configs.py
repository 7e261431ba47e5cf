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
            if (
                isinstance(b, ast.Expr)
                and isinstance(getattr(b, "value", None), ast.Constant)
                and isinstance(b.value.value, str)
            ):
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


def _optional_kind(f) -> type | None:
    """``int``, ``float`` or ``str`` of a field annotated ``X | None`` (a nested settings field)."""
    text = str(f.type)
    return next((k for k in (int, float, str) if k.__name__ in text.split(" | ")), None)


def add_dataclass_args(parser: argparse.ArgumentParser, cls, _nested=None) -> None:
    """One ``--flag`` per field (underscores become dashes), its docstring as help. A field holding a
    dataclass (the estimator ``settings``) contributes one flag per field of its own, by its name
    (``--G``, ``--regularizer``); there a field that defaults to None takes its annotated type."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        default = (
            getattr(_nested, f.name)
            if _nested is not None
            else (f.default if f.default is not dataclasses.MISSING else f.default_factory())
        )
        if dataclasses.is_dataclass(default):
            add_dataclass_args(parser, type(default), _nested=default)
            continue
        flag = "--" + f.name.replace("_", "-")
        kind = type(default) if default is not None or _nested is None else _optional_kind(f)
        # argparse %-formats help strings: a literal % in a docstring (or a default) must be doubled
        text = f"{docs.get(f.name, '')} (default {default})".replace("%", "%%")
        if kind is bool:
            parser.add_argument(flag, type=parse_bool, nargs="?", const=True, default=default, help=text)
        elif kind in (int, float, str):
            parser.add_argument(flag, type=kind, default=default, help=text)


def dataclass_from_args(cls, args: argparse.Namespace):
    """``cls`` from parsed flags (:func:`add_dataclass_args`), a nested dataclass field rebuilt from its own."""
    values = vars(args)
    out = {}
    for f in dataclasses.fields(cls):
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        )
        if dataclasses.is_dataclass(default):
            out[f.name] = dataclasses.replace(
                default, **{g.name: values[g.name] for g in dataclasses.fields(default) if g.name in values}
            )
        elif f.name in values:
            out[f.name] = values[f.name]
    return cls(**out)

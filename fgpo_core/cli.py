"""The ``fgpo`` command line: one entry point per long job."""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _book(args) -> int:
    from .bookbuild import build_book

    return build_book(args.profile, args.chapter or None, execute=not args.no_execute, html=not args.no_html)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fgpo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    book = sub.add_parser("book", help="execute the chapters with papermill and render the book")
    book.add_argument("--profile", default="cpu",
                      help="ci, cpu (default: the rendered book) or gpu, or a path to a profile YAML")
    book.add_argument("--chapter", action="append", metavar="NAME",
                      help="execute only this chapter (repeatable); the others must have been executed before")
    book.add_argument("--no-execute", action="store_true", help="render the already executed chapters")
    book.add_argument("--no-html", action="store_true", help="execute only; skip Jupyter Book")
    book.set_defaults(func=_book)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

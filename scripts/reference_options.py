"""Write the option tables of docs/reference.md from the `pacebench` argparse parsers, so the
reference cannot drift from the command line: one table per command (option, default, what it
does), between the markers below. `--check` writes nothing and exits 1 when the file differs
(tests/unit/project/test_docs.py runs it that way).

    .venv/bin/python scripts/reference_options.py [--check] [--file docs/reference.md]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- options: written by scripts/reference_options.py from the parsers; do not edit -->"
END = "<!-- end of options -->"


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return names
    return f"{names} `{action.metavar or action.dest.upper()}`"


def _default(action: argparse.Action) -> str:
    value = action.default
    if value in (None, False, argparse.SUPPRESS) or action.nargs == 0 or value == []:
        return ""
    return f"`{_cell(value)}`"


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:  # argparse's own expansion: %(default)s, %(choices)s, ...
        text = text % {**vars(action), "default": action.default,
                       "choices": ", ".join(map(str, action.choices or ()))}
    if action.choices and "choices" not in (action.help or ""):
        text += f" (one of {', '.join(map(str, action.choices))})"
    return _cell(text)


def tables(parser: argparse.ArgumentParser) -> str:
    """The generated section: each command's summary and its table of options."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help for a in sub._choices_actions}
    out = [BEGIN, ""]
    for name, command in sub.choices.items():
        out += [f"### `pacebench {name}`", ""]
        if summaries.get(name):
            out += [_cell(summaries[name]), ""]
        out += ["| option | default | what it does |", "| --- | --- | --- |"]
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            out.append(f"| {_option(action)} | {_default(action)} | {_help(action)} |")
        out.append("")
    out.append(END)
    return "\n".join(out)


def rewritten(text: str, section: str) -> str:
    """`text` with its generated section replaced by `section` (appended when absent)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + section + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n## Every option, by command\n\n" + section + "\n"


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args.add_argument("--file", type=Path, default=ROOT / "docs" / "reference.md")
    opts = args.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from runners.cli import build_parser

    text = opts.file.read_text()
    new = rewritten(text, tables(build_parser()))
    if opts.check:
        if new != text:
            print(f"{opts.file}: the option tables differ from the parsers; run "
                  f"scripts/reference_options.py", file=sys.stderr)
            return 1
        return 0
    opts.file.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

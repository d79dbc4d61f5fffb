"""`pacebench report` and `serve`: the HTML report and the dashboard over a store."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runners.cli.common import check_folder, store_path
from runners.cli.flags import read_flags, store_flag
from runners.cli.types import Deprecated as _Deprecated, csv as _csv
from workbench.errors import UserError

__all__ = ["add", "report", "serve"]


def add(sub) -> None:
    """The group's parsers."""
    p = sub.add_parser("report", help="write a self-contained HTML report (and figures)")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--title", help="the report's title (default: the store's name)")
    read_flags(p)
    # the old flag, for one release: one ruleset name (report.one_ruleset)
    p.add_argument("--rulesets", action=_Deprecated, instead="--ruleset (one ruleset: "
                   "rulesets never share a score)", help=argparse.SUPPRESS)
    p.add_argument("--workloads", help="show only these workloads, comma-separated")
    p.add_argument("--algorithms", help="show only these algorithms, comma-separated")
    p.add_argument("--reference", help="the algorithm speedups are measured against (default: "
                   "baseline when present, else adamw, else the first name)")
    p.add_argument("--figures", metavar="DIR",
                   help="also write each view's plots into DIR as files for papers")
    p.add_argument("--formats", type=_csv, default="png,svg",
                   help="figure formats, comma-separated (default png,svg)")
    store_flag(p)
    p.set_defaults(func=report)

    p = sub.add_parser("serve", help="serve the dashboard over a store")
    p.add_argument("--address", default="127.0.0.1", help="bind address (default 127.0.0.1 only)")
    p.add_argument("--port", type=int, default=5006, help="the port to serve on")
    store_flag(p)
    p.set_defaults(func=serve)


def report(args: argparse.Namespace) -> int:
    """`pacebench report`: a self-contained HTML report (and figures)."""
    from workbench.report import one_ruleset, write_report

    ruleset = args.ruleset if args.rulesets is None else one_ruleset(args.rulesets, args.ruleset)
    check_folder("--out", Path(args.out).parent, "the report")
    if args.figures:
        check_folder("--figures", args.figures, "the figures")
    out = write_report(store_path(args), Path(args.out), title=args.title,
                       ruleset=ruleset, studies=args.studies or None,
                       with_adhoc=args.with_adhoc, workloads=args.workloads,
                       algorithms=args.algorithms, figures=args.figures,
                       formats=args.formats, reference=args.reference)
    print(f"report written to {out} (self-contained; open it in a browser)")
    if args.figures:
        print(f"figures ({', '.join(args.formats)}) written to {args.figures}")
    return 0


def serve(args: argparse.Namespace) -> int:
    """`pacebench serve`: the dashboard over a store (`panel serve workbench/app.py`), in a
    child process that stops when this one gets SIGTERM or SIGINT, or dies. A path that is no
    store, and an address that does not resolve, are refused before anything starts."""
    from runners.launch.processes import run_child
    from workbench.app import ALLOW_REMOTE
    from workbench.store import open_store

    store = open_store(store_path(args))  # StoreError: one line naming the path
    if ":" in args.address:
        raise UserError(f"--address {args.address}: an IPv6 address, which the dashboard's "
                        "server (Bokeh) cannot take as an allowed origin; give an IPv4 address "
                        "or a host name, e.g. 127.0.0.1 or localhost")
    loopback = _loopback(args.address, args.port)
    host = args.address
    app = Path(__file__).resolve().parents[2] / "workbench" / "app.py"
    env = {**os.environ, "PACEBENCH_STORE": str(store.root.resolve())}
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", args.address,
           "--port", str(args.port), "--allow-websocket-origin", f"{host}:{args.port}"]
    if args.address in ("127.0.0.1", "localhost"):
        cmd += ["--allow-websocket-origin", f"localhost:{args.port}"]
    if not loopback:
        env[ALLOW_REMOTE] = "1"  # the user asked for another interface: show the store there
    print(f"serving {store.root} at http://{host}:{args.port}/app", flush=True)
    return run_child(cmd, env)


def _loopback(address: str, port: int) -> bool:
    """Whether every address `address` resolves to is a loopback one; UserError (one line)
    when it does not resolve."""
    import ipaddress
    import socket

    try:
        found = socket.getaddrinfo(address, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as err:
        raise UserError(f"--address {address}: cannot be resolved ({err}); give a host name "
                        "or an IP address of this machine, e.g. 127.0.0.1") from None
    return all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in found)

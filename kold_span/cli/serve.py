"""`kold-span serve`: the moderation service (HTTP API, Perspective-compatible analyze, web page).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kold-span")
    >>> _ = add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["serve", "--model", "m", "--port", "0"])
    >>> args.host, args.port, args.max_queue
    ('127.0.0.1', 0, 1024)
"""
from __future__ import annotations

import argparse
import logging
import sys

from kold_span.cli.options import non_negative_float, positive_int
from kold_span.config.choices import Runtime
from kold_span.service.requests import Limits


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 for any free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must lie in 0 … 65535, got {value}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `serve` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(["--model", "a/model", "--port", "0"])
        >>> args.host, args.port, args.max_queue
        ('127.0.0.1', 0, 1024)
    """

    limits = Limits()
    p = subparsers.add_parser("serve", help="serve a model over HTTP: predict, Perspective's analyze, a web page")
    p.add_argument("--model", required=True, nargs="+", metavar="DIR",
                   help="a model directory; several make an ensemble, as in predict")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=port_number, default=8080, help="0 picks a free port (printed)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--runtime", choices=Runtime.values(), default="auto",
                   help="what runs the network: torch, onnx (the graph `kold-span export` wrote into the model "
                        "directory, on the CPU) or auto (that graph when there is one and --device is cpu)")
    p.add_argument("--threads", type=positive_int,
                   help="torch's CPU threads (default: torch's choice; on a machine shared with other jobs "
                        "1 can be much faster, see docs/SERVICE.md)")
    p.add_argument("--attributes", metavar="FILE",
                   help="Perspective attribute names → the model's tasks and labels (YAML or JSON; "
                        "default: from the task names, see docs/SERVICE.md)")
    p.add_argument("--max-batch-tokens", type=positive_int, default=8192,
                   help="padded tokens per forward pass (windows × the longest window)")
    p.add_argument("--max-wait-ms", type=non_negative_float, default=5.0,
                   help="how long the first comment of a batch waits for others")
    p.add_argument("--max-queue", type=positive_int, default=1024,
                   help="comments that may wait for the model; past it requests get 429")
    p.add_argument("--max-bytes", type=positive_int, default=limits.max_bytes, help="request body size (413 past it)")
    p.add_argument("--max-comments", type=positive_int, default=limits.max_comments,
                   help="comments per request or uploaded file (413 past it)")
    p.add_argument("--max-chars", type=positive_int, default=limits.max_chars,
                   help="characters of one comment or its context (413 past it); longer comments "
                        "are scored in windows, whole")
    p.add_argument("--drain-seconds", type=non_negative_float, default=60.0,
                   help="on SIGTERM, how long requests in flight may take to finish")
    p.add_argument("--access-log", action="store_true", help="log every request")
    return p


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or Ctrl-C; 0 after a clean drain, 2 when the model cannot be loaded."""
    from kold_span.inference.ensemble import load_predictor
    from kold_span.service import server
    from kold_span.service.app import Settings, create_app

    if args.max_comments > args.max_queue:
        print(f"kold-span serve: error: --max-comments {args.max_comments} is more than --max-queue "
              f"{args.max_queue}: such a request could never be queued", file=sys.stderr)
        return 2
    settings = Settings(limits=Limits(args.max_bytes, args.max_comments, args.max_chars),
                        max_batch_tokens=args.max_batch_tokens, max_wait_ms=args.max_wait_ms,
                        max_queue=args.max_queue, attributes_file=args.attributes, models=tuple(args.model),
                        device=args.device)
    def load():
        if args.threads:
            import torch
            torch.set_num_threads(args.threads)
        return load_predictor(args.model, device=args.device, runtime=args.runtime)

    app = create_app(settings, load)
    try:
        sock = server.bind(args.host, args.port)
    except OSError as err:
        print(f"kold-span serve: error: cannot listen on {args.host}:{args.port}: {err.strerror}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    print(f"kold-span serve: http://{shown}:{port}/ (loading the model; GET /health says 200 once it is warm)",
          flush=True)
    server.run(app, sock, access_log=args.access_log, drain_seconds=args.drain_seconds)
    failure = app.state.service.failure
    if failure is not None:
        message = failure.args[0] if isinstance(failure, KeyError) and failure.args else failure
        print(f"kold-span serve: error: {message}", file=sys.stderr)
        return 2
    print("kold-span serve: stopped", flush=True)
    return 0

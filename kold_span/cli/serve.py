"""`kold-span serve`: the moderation service (HTTP API, Perspective-compatible analyze, web page)."""
from __future__ import annotations

import argparse
import logging
from typing import Optional

from kold_span.cli.options import add_repeatable, non_empty_path, non_negative_float, port_number, positive_int
from kold_span.config.choices import Runtime
from kold_span.errors import ArgumentError
from kold_span.service.requests import Limits
from kold_span.service.server import ConnectionLimits


def rate(text: str) -> str:
    """An argparse type: a rate such as `20/second` or `100 per minute` (the `limits` package's notation)."""
    from limits import parse

    try:
        parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate such as 20/second or 600/minute, got {text!r}") from None
    return text


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `serve` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(["--model", "a/model", "--port", "0"])
        >>> args.host, args.port, args.max_queue
        ('127.0.0.1', 0, 1024)
    """
    limits, connections = Limits(), ConnectionLimits()
    p = subparsers.add_parser("serve", help="serve a model over HTTP: predict, Perspective's analyze, a web page")
    add_repeatable(p, "--model", "DIR", "a model directory; several make an ensemble, as in predict", required=True)
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
    p.add_argument("--max-request-chars", type=positive_int, default=limits.max_request_chars,
                   help="characters of a request's comments and contexts together (413 past it)")
    p.add_argument("--max-request-tokens", type=positive_int, default=65536,
                   help="tokens of a request's comments (each comment's windows × its longest window; "
                        "413 past it, before any of them runs)")
    p.add_argument("--max-comment-tokens", type=positive_int,
                   help="tokens of one comment (its windows × its longest window; 413 past it). A comment "
                        "runs in one forward pass: set it to --max-batch-tokens to bound how long one client's "
                        "comment can make the others wait (default: no limit beyond --max-chars)")
    p.add_argument("--max-context-turns", type=positive_int, default=limits.max_context_turns,
                   help="turns of one comment's context (413 past it)")
    p.add_argument("--max-id-chars", type=positive_int, default=limits.max_id_chars,
                   help="characters of an id or clientToken, which are echoed back (413 past it)")
    p.add_argument("--max-headers", type=positive_int, default=100, help="request headers (431 past it)")
    p.add_argument("--max-header-bytes", type=positive_int, default=connections.max_header_bytes,
                   help="bytes of the request line and headers (431 past it)")
    p.add_argument("--header-timeout", type=non_negative_float, default=connections.header_timeout,
                   help="seconds a connection may take to send its request line and headers (then closed)")
    p.add_argument("--keep-alive", type=positive_int, default=connections.keep_alive,
                   help="seconds an idle keep-alive connection stays open")
    p.add_argument("--max-connections", type=positive_int, default=connections.max_connections,
                   help="open connections (more are closed as they arrive; past it with requests in flight, 503)")
    p.add_argument("--http", choices=("auto", "httptools", "h11"), default="auto",
                   help="uvicorn's HTTP parser (auto: httptools when installed)")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="an origin whose pages may call the API from a browser (repeat for several; "
                        "default none: no CORS headers)")
    p.add_argument("--allowed-hosts", action="extend", nargs="+", default=[], metavar="HOST",
                   help="Host header values served (e.g. api.example.com *.example.com); others get 400")
    p.add_argument("--api-keys", metavar="FILE",
                   help="require an API key on /v1 routes: FILE holds 'NAME SHA256' lines (docs/SERVICE.md)")
    p.add_argument("--rate-limit", type=rate, metavar="RATE",
                   help="requests per key, e.g. 20/second (with --api-keys; 429 past it)")
    p.add_argument("--daily-quota", type=positive_int, metavar="N",
                   help="comments per key and day (with --api-keys; 429 past it)")
    p.add_argument("--feedback", metavar="FILE", type=non_empty_path,
                   help="keep moderators' corrections (POST /v1alpha1/comments:suggestscore) as training data: "
                        "canonical JSONL appended to FILE (default: the route is off)")
    p.add_argument("--feedback-max-bytes", type=positive_int, default=100 * 1024 * 1024,
                   help="the feedback file's size cap (429 past it)")
    p.add_argument("--model-name", help="the model's name in /info and the X-Model header "
                                        "(default: the last two parts of its directory)")
    p.add_argument("--drain-seconds", type=non_negative_float, default=60.0,
                   help="on SIGTERM, how long requests in flight may take to finish")
    p.add_argument("--drain-delay", type=non_negative_float, default=2.0,
                   help="on SIGTERM, seconds of /readyz 503 'draining' while still serving, so a load "
                        "balancer stops sending before the listener closes (a second signal skips it)")
    p.add_argument("--access-log", nargs="?", const="text", choices=("text", "json"),
                   help="log every request (json: one JSON object a line); API keys are never logged")
    return p


def configure_logging(access_log: Optional[str]) -> None:
    """Log lines with the request id; the access log (when on) as bare lines, JSON or text."""
    from kold_span.service.middleware import RequestIdFilter

    form = logging.Formatter("%(levelname)s: %(name)s: [%(request_id)s] %(message)s")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    for handler in logging.getLogger("kold_span").handlers:  # the command line's handler (cli.main)
        handler.addFilter(RequestIdFilter())
        handler.setFormatter(form)
    if access_log:
        access = logging.getLogger("kold_span.access")
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.propagate = False


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or Ctrl-C; 0 after a clean drain.

    Bad options, a port that cannot be listened on and a model that cannot be loaded are raised, for
    `cli.main` to report as every command's errors are (one line, exit status 2).
    """
    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.pipeline import RunOptions
    from kold_span.service import server
    from kold_span.service.app import Settings, create_app

    if args.max_comments > args.max_queue:
        raise ArgumentError(f"--max-comments {args.max_comments} is more than --max-queue {args.max_queue}: such "
                            "a request could never be queued")
    if (args.rate_limit or args.daily_quota) and not args.api_keys:
        raise ArgumentError("--rate-limit and --daily-quota count per API key; give --api-keys FILE")
    if args.feedback:  # appended to while serving: a file of its own, outside the models and apart from the inputs
        from kold_span.cli.options import check_outputs

        check_outputs({"--feedback": args.feedback}, {"--api-keys": args.api_keys, "--attributes": args.attributes},
                      models=args.model)
    keys = None
    if args.api_keys:
        from kold_span.service.keys import KeyRing, load_keys

        keys = KeyRing(load_keys(args.api_keys), args.rate_limit, args.daily_quota)
    connections = ConnectionLimits(args.max_connections, args.header_timeout, args.max_header_bytes,
                                   args.keep_alive)
    settings = Settings(limits=Limits(args.max_bytes, args.max_comments, args.max_chars, args.max_request_chars,
                                      args.max_context_turns, args.max_id_chars),
                        max_batch_tokens=args.max_batch_tokens, max_request_tokens=args.max_request_tokens,
                        max_comment_tokens=args.max_comment_tokens,
                        max_wait_ms=args.max_wait_ms, max_queue=args.max_queue, max_headers=args.max_headers,
                        connections=connections, attributes_file=args.attributes, models=tuple(args.model),
                        model_name=args.model_name, device=args.device, cors_origins=tuple(args.cors_origin),
                        allowed_hosts=tuple(args.allowed_hosts), keys=keys, access_log=args.access_log,
                        feedback_file=args.feedback, feedback_max_bytes=args.feedback_max_bytes)
    def load():
        if args.threads:
            import torch
            torch.set_num_threads(args.threads)
        return load_predictor(args.model, RunOptions(device=args.device, runtime=args.runtime))

    app = create_app(settings, load)
    try:
        sock = server.bind(args.host, args.port)
    except OSError as err:
        raise OSError(f"cannot listen on {args.host}:{args.port}: {err.strerror}") from err
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    configure_logging(args.access_log)
    print(f"kold-span serve: http://{shown}:{port}/ (loading the model; GET /readyz says 200 once it is warm)",
          flush=True)
    server.run(app, sock, drain_seconds=args.drain_seconds, connections=connections, http=args.http,
               drain_delay=args.drain_delay)
    if app.state.service.failure is not None:
        raise app.state.service.failure
    print("kold-span serve: stopped", flush=True)
    return 0

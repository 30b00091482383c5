"""`kold-span serve`: the moderation service (HTTP API, Perspective-compatible analyze, web page)."""
from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import logging
import typing
from typing import Any, Iterator, Optional

from kold_span.cli.options import non_empty_path, non_negative_float, port_number, positive_int
from kold_span.errors import ArgumentError, needs_extra
from kold_span.service.settings import Settings


def rate(text: str) -> str:
    """An argparse type: a rate such as `20/second` or `100 per minute` (the `limits` package's notation)."""
    try:
        from limits import parse
    except ModuleNotFoundError:  # `run` names the extra to install before the rate is used
        return text

    try:
        parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate such as 20/second or 600/minute, got {text!r}") from None
    return text


# The argparse type of an option, by its field's type or the `type` its metadata names.
ARGUMENT_TYPES: dict[Any, Any] = {int: positive_int, float: non_negative_float, "port": port_number,
                                  "path": non_empty_path, "rate": rate}


def options(cls: type = Settings) -> Iterator[tuple[dataclasses.Field, Any]]:
    """Each field of `Settings` with its type, the fields of a nested settings class in its place."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            yield from options(hints[field.name])
        else:
            yield field, hints[field.name]


def flag(field: dataclasses.Field) -> str:
    """A field's option: `--<name>` with dashes, unless its metadata names another."""
    return field.metadata.get("flag", "--" + field.name.replace("_", "-"))


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `serve` subcommand, one option per field of `service.settings.Settings`.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(["--model", "a/model", "--port", "0"])
        >>> args.host, args.port, args.max_queue
        ('127.0.0.1', 0, 1024)
    """
    p = subparsers.add_parser("serve", help="serve a model over HTTP: predict, Perspective's analyze, a web page")
    for field, hint in options():
        keywords = {k: v for k, v in field.metadata.items() if k != "flag"}
        kind = keywords.pop("type", next((t for t in typing.get_args(hint) if t is not type(None)), hint))
        if kind in ARGUMENT_TYPES and "action" not in keywords:
            keywords["type"] = ARGUMENT_TYPES[kind]
        default = list(field.default) if isinstance(field.default, tuple) else field.default
        p.add_argument(flag(field), default=default, **keywords)
    return p


def settings_from(args: argparse.Namespace, cls: type = Settings) -> Any:
    """The `Settings` the options of `add_parser` hold (lists as tuples)."""
    hints, values = typing.get_type_hints(cls), {}
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            values[field.name] = settings_from(args, hints[field.name])
        else:
            value = getattr(args, flag(field)[2:].replace("-", "_"))
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


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

    with needs_extra("serve"):
        from kold_span.service import server
        from kold_span.service.app import create_app

    s = settings_from(args)
    if s.limits.max_comments > s.max_queue:
        raise ArgumentError(f"--max-comments {s.limits.max_comments} is more than --max-queue {s.max_queue}: such "
                            "a request could never be queued")
    if s.max_client_queue is not None and s.limits.max_comments > s.max_client_queue:
        raise ArgumentError(f"--max-comments {s.limits.max_comments} is more than --max-client-queue "
                            f"{s.max_client_queue}: such a request could never be queued")
    for proxy in s.trusted_proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ArgumentError(f"--trusted-proxies {proxy!r}: expected an address or a network such as "
                                "10.0.0.0/8") from None
    if not 0 < s.feedback_key_share <= 1:
        raise ArgumentError(f"--feedback-key-share {s.feedback_key_share}: a share of the file, in (0, 1]")
    if (s.rate_limit or s.daily_quota) and not s.api_keys:
        raise ArgumentError("--rate-limit and --daily-quota count per API key; give --api-keys FILE")
    if s.feedback_file:  # appended to while serving: a file of its own, outside the models and apart from the inputs
        from kold_span.cli.options import check_outputs

        check_outputs({"--feedback": s.feedback_file}, {"--api-keys": s.api_keys, "--attributes": s.attributes_file},
                      models=s.models)

    def load():
        if s.threads:
            import torch
            torch.set_num_threads(s.threads)
        return load_predictor(list(s.models), RunOptions(device=s.device, runtime=s.runtime))

    app = create_app(s, load)
    try:
        sock = server.bind(s.host, s.port)
    except OSError as err:
        raise OSError(f"cannot listen on {s.host}:{s.port}: {err.strerror}") from err
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    configure_logging(s.access_log)
    print(f"kold-span serve: http://{shown}:{port}/ (loading the model; GET /readyz says 200 once it is warm)",
          flush=True)
    server.run(app, sock, drain_seconds=s.drain_seconds, connections=s.connections, http=s.http,
               drain_delay=s.drain_delay)
    if app.state.service.failure is not None:
        raise app.state.service.failure
    print("kold-span serve: stopped", flush=True)
    return 0

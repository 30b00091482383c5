"""What `kold-span serve` configures, one field an option: `cli.serve` builds its options from these fields.

A field's metadata (`config.binding.option`) holds its option's help and what argparse needs beyond the
field's type and default (`flag` when it is not `--<name>`, `type` for a check its type does not say:
"port", "path", "rate"); the fields of the nested `Limits` and `ConnectionLimits` are options too.

Example:
    >>> settings = Settings(models=("runs/demo/model",), limits=Limits(max_comments=8))
    >>> settings.max_queue, settings.limits.max_comments, settings.connections.keep_alive
    (1024, 8, 5)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from kold_span.config.binding import option
from kold_span.config.choices import Runtime
from kold_span.service.requests import Limits
from kold_span.service.server import ConnectionLimits


@dataclass(frozen=True)
class Settings:
    """The model, where to listen, limits, batching, access, feedback and drain (see each field's help)."""

    models: tuple[str, ...] = option(  # the directories: hashed for the model's identity, never shown
        "a model directory; several make an ensemble, as in predict", (), flag="--model", metavar="DIR",
        action="extend", nargs="+", required=True)
    host: str = option("address to listen on (default: loopback only)", "127.0.0.1")
    port: int = option("0 picks a free port (printed)", 8080, type="port")
    device: str = option("cpu or cuda", "cpu")
    runtime: str = option("what runs the network: torch, onnx (the graph `kold-span export` wrote into the model "
                          "directory, on the CPU) or auto (that graph when there is one and --device is cpu)", "auto",
                          choices=Runtime.values())
    threads: Optional[int] = option("torch's CPU threads (default: torch's choice; on a machine shared with other "
                                    "jobs 1 can be much faster, see docs/SERVICE.md)")
    attributes_file: Optional[str] = option(
        "Perspective attribute names → the model's tasks and labels (YAML or JSON; default: from the task names, see "
        "docs/SERVICE.md)", flag="--attributes", metavar="FILE")
    max_batch_tokens: int = option("padded tokens per forward pass (windows × the longest window)", 8192)
    max_wait_ms: float = option("how long the first comment of a batch waits for others", 5.0)
    max_queue: int = option("comments that may wait for the model; past it requests get 429", 1024)
    max_client_queue: Optional[int] = option(
        "comments one client (its API key, else its address) may have waiting; past it that client's requests get "
        "429 while others are still let in (default: half of --max-queue, at least --max-comments)")
    limits: Limits = field(default_factory=Limits)
    max_request_tokens: int = option("tokens of a request's comments (each comment's windows × its longest window; "
                                     "413 past it, before any of them runs)", 65536)
    max_comment_tokens: Optional[int] = option(
        "tokens of one comment (its windows × its longest window; 413 past it). A comment runs in one forward pass: "
        "set it to --max-batch-tokens to bound how long one client's comment can make the others wait (default: no "
        "limit beyond --max-chars)")
    max_headers: int = option("request headers (431 past it)", 100)
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    http: str = option("uvicorn's HTTP parser (auto: httptools when installed)", "auto",
                       choices=("auto", "httptools", "h11"))
    cors_origins: tuple[str, ...] = option("an origin whose pages may call the API from a browser (repeat for "
                                           "several; default none: no CORS headers)", (), flag="--cors-origin",
                                           action="append", metavar="ORIGIN")
    allowed_hosts: tuple[str, ...] = option("Host header values served (e.g. api.example.com *.example.com); others "
                                            "get 400", (), action="extend", nargs="+", metavar="HOST")
    trusted_proxies: tuple[str, ...] = option(
        "addresses or networks (10.0.0.0/8) of the proxies in front: only from these is X-Forwarded-For believed as "
        "the client's address (default none: the connection's address is the client's)", (), action="extend",
        nargs="+", metavar="ADDR")
    api_keys: Optional[str] = option("require an API key on /v1 routes: FILE holds 'NAME SHA256' lines "
                                     "(docs/SERVICE.md)", metavar="FILE")
    rate_limit: Optional[str] = option("requests per key, e.g. 20/second (with --api-keys; 429 past it)",
                                       type="rate", metavar="RATE")
    daily_quota: Optional[int] = option("comments per key and day (with --api-keys; 429 past it)", metavar="N")
    feedback_file: Optional[str] = option(
        "keep moderators' corrections (POST /v1alpha1/comments:suggestscore) as training data: canonical JSONL "
        "appended to FILE (default: the route is off)", flag="--feedback", metavar="FILE", type="path")
    feedback_max_bytes: int = option("the feedback file's size cap (507 past it)", 100 * 1024 * 1024)
    feedback_key_share: float = option("the share of --feedback-max-bytes one API key's suggestions may take (all "
                                       "clients without a key together count as one, 'anonymous'; 507 past it)",
                                       0.25)
    feedback_max_request_bytes: int = option("bytes of one suggestion as a feedback line (413 past it)", 262144)
    model_name: Optional[str] = option("the model's name in /info and the X-Model header (default: the last two "
                                       "parts of its directory)")
    drain_seconds: float = option("on SIGTERM, how long requests in flight may take to finish", 60.0)
    drain_delay: float = option("on SIGTERM, seconds of /readyz 503 'draining' while still serving, so a load "
                                "balancer stops sending before the listener closes (a second signal skips it)", 2.0)
    access_log: Optional[str] = option("log every request (json: one JSON object a line); API keys are never logged",
                                       nargs="?", const="text", choices=("text", "json"))

    def client_queue(self) -> int:
        """One client's share of the queue: `max_client_queue`, else half the queue but at least one whole request.

        Example:
            >>> Settings().client_queue(), Settings(max_queue=600).client_queue()
            (512, 512)
            >>> Settings(max_queue=1500).client_queue(), Settings(max_client_queue=9).client_queue()
            (750, 9)
        """
        if self.max_client_queue is not None:
            return self.max_client_queue
        return min(self.max_queue, max(self.max_queue // 2, self.limits.max_comments))

"""Is `kold-span serve` fair under abuse? One-comment latency, /livez and memory while hostile clients run.

In one run, over loopback only (a `kold-span serve` child listening on 127.0.0.1; each attacker
connects from its own loopback address, 127.0.0.2 and up, so that the per-address limits treat it as
one client and the victim, from 127.0.0.1, as another):
  1. idle: a victim client sends one-comment requests, one at a time: p50/p99 latency; the
     server's RSS after it (after warm-up);
  2. one slice: the largest request the service accepts (comments of `--max-chars` characters
     with titles as long, as many as fit `--max-request-tokens`, found by halving), alone
     (`--slice-runs` times, one after the other): the time of a forward pass of the whole
     `--max-batch-tokens` budget (its passes' time per padded token × the budget: a long comment's
     passes are slices of it, the last one shorter), and its mean pass;
  3. maximal clients: the same victim while each of `--attackers` clients (1, then 8) keeps one
     maximal request in flight, sent again as soon as it is answered;
  4. slow headers: `--dribblers` connections send their headers a byte a second;
  5. slow bodies: `--slow-bodies` connections send headers, then a body a byte a second;
  6. idle sockets: `--idle-sockets` connections that send nothing, reopened when closed;
  7. bursts: rounds of `--burst` concurrent one-comment requests, each on a new connection;
  8. then bursts until the attackers have sent `--hostile` requests in all; the server's RSS after.
In phases 3-7 a prober asks `GET /livez` on a fresh connection every 0.1 s (2 s timeout) and counts
the answers.

Targets (issue 56): the victim's p99 beside 1 and 8 maximal clients within 2 × its idle p99 plus one
slice (phase 2); `/livez` answered every time; RSS after the hostile requests within 1.2 × after
warm-up. Every loop is bounded in count and in time. `--before FILE` adds the latencies of an earlier
run (its JSON: the same bench run on an older checkout) beside this one's.

    python bench/serve_abuse.py --model checkpoints/demo/demo/model [--seconds 15] [--threads 1]

Results go to bench/results/SECTION.json and the SECTION (default `serve-abuse`) of docs/SERVICE.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from contextlib import closing, suppress
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import machine_line, save_results, write_section  # noqa: E402
from kold_span.service.settings import Settings  # noqa: E402
from serve_load import (SERVICE_DOC, Connection, body_of, metric, model_names, percentile, rss_mb,  # noqa: E402
                        scrape, served)

BUDGET = Settings().max_batch_tokens  # the server's padded tokens per forward pass (not changed here)
VICTIM = {"text": "오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다", "title": "프로야구 개막전 매진"}
FILLER = "저 의원은 진짜 말하는 것마다 역겹다 ㅋㅋ 이번 정책은 좀 멍청한 결정 같네요 "


def maximal(chars: int, count: int) -> bytes:
    """A request of `count` comments of `chars` characters, each with a title as long."""
    text = (FILLER * (chars // len(FILLER) + 1))[:chars]
    comments = [{"id": str(i), "text": text, "title": text} for i in range(count)]
    return json.dumps({"comments": comments}, ensure_ascii=False).encode("utf-8")


def source(i: int) -> str:
    """The loopback address attacker `i` connects from (127.0.0.2 and up; the victim is 127.0.0.1)."""
    return f"127.0.0.{2 + i % 250}"


async def open_from(host: str, port: int, address: str):
    """A connection's (reader, writer) from a local `address`."""
    return await asyncio.open_connection(host, port, local_addr=(address, 0))


async def request_from(connection: Connection, address: str, method: str, path: str, body: bytes = b"",
                       timeout: float = 120.0) -> tuple[int, dict, bytes]:
    """`connection.request`, (re)opened from a local `address`."""
    if connection.writer is None:
        connection.reader, connection.writer = await open_from(connection.host, connection.port, address)
    return await connection.request(method, path, body, timeout=timeout)


def count(counts: dict, key) -> None:
    counts[key] = counts.get(key, 0) + 1


async def victim(host: str, port: int, seconds: float, max_requests: int,
                 failures: Optional[dict] = None) -> tuple[list, list]:
    """One-comment requests, one at a time, for `seconds` (at most `max_requests`): latencies of the 200s and,
    after them, their time in the server's queue (`x-queue-time`); other answers and errors are counted in
    `failures`."""
    body = body_of(VICTIM)
    latencies, queued, failures = [], [], failures if failures is not None else {}
    deadline = time.perf_counter() + seconds
    with closing(Connection(host, port)) as connection:
        for _ in range(max_requests):
            if time.perf_counter() >= deadline:
                break
            sent = time.perf_counter()
            try:
                status, headers, _ = await connection.request("POST", "/v1/predict", body, timeout=300)
            except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
                status, headers = 0, {}
            if status == 200:
                latencies.append(time.perf_counter() - sent)
                queued.append(float(headers.get("x-queue-time", "nan")) / 1000)
            else:
                count(failures, status)
            await asyncio.sleep(0.05)  # a steady trickle, not a flood
    return latencies, queued


async def largest_accepted(host: str, port: int, chars: int, count_: int) -> int:
    """The most comments of `chars` characters one request may hold (halving from `count_`)."""
    with closing(Connection(host, port)) as connection:
        while count_ >= 1:
            try:
                status, _, body = await connection.request("POST", "/v1/predict", maximal(chars, count_), timeout=600)
            except (OSError, ConnectionError):  # refused on its Content-Length while still being sent
                status, body = 413, b""
            if status == 200:
                return count_
            if status != 413:
                raise SystemExit(f"a maximal request got {status}: {body[:300]!r}")
            count_ //= 2
    raise SystemExit("not even one comment of --max-chars characters fits --max-request-tokens")


async def attacker(host: str, port: int, stop: asyncio.Event, counts: dict, address: str, body: bytes) -> None:
    """Keeps one maximal request in flight from `address`; counts the answers."""
    with closing(Connection(host, port)) as connection:
        while not stop.is_set():
            try:
                status, _, _ = await request_from(connection, address, "POST", "/v1/predict", body, timeout=600)
            except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
                status = 0
                await asyncio.sleep(0.1)
            count(counts, status)
            count(counts, "sent")


async def open_or_count(host: str, port: int, counts: dict, address: str):
    """A connection's (reader, writer), or None after counting a refusal and waiting half a second."""
    try:
        return await open_from(host, port, address)
    except OSError:
        count(counts, "refused")
        await asyncio.sleep(0.5)
        return None


async def trickle(host: str, port: int, stop: asyncio.Event, counts: dict, address: str, at_once: bytes,
                  slowly: bytes) -> None:
    """Sends `at_once`, then `slowly` a byte a second, on connection after connection; counts how often the
    server cut one off (a connection reset is a cut-off too)."""
    while not stop.is_set():
        opened = await open_or_count(host, port, counts, address)
        if opened is None:
            continue
        count(counts, "sent")
        reader, writer = opened
        with closing(writer), suppress(OSError):
            writer.write(at_once)
            for byte in slowly:
                if stop.is_set() or reader.at_eof():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
        count(counts, "cut")


async def dribbler(host: str, port: int, stop: asyncio.Event, counts: dict, address: str) -> None:
    """Sends a request's headers a byte a second."""
    head = f"GET /readyz HTTP/1.1\r\nHost: {host}\r\nX-Slow: {'a' * 200}\r\n\r\n".encode()
    await trickle(host, port, stop, counts, address, b"", head)


async def slow_body(host: str, port: int, stop: asyncio.Event, counts: dict, address: str) -> None:
    """Sends a request's headers, then its body a byte a second."""
    head = (f"POST /v1/predict HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 1000\r\n\r\n").encode()
    await trickle(host, port, stop, counts, address, head, b" " * 1000)


async def idle_socket(host: str, port: int, stop: asyncio.Event, counts: dict, address: str) -> None:
    """Opens a connection and sends nothing; opens another when the server closes it (at most every 0.5 s)."""
    while not stop.is_set():
        opened = await open_or_count(host, port, counts, address)
        if opened is None:
            continue
        count(counts, "opened")  # connections, not requests: not in the count of hostile requests
        reader, writer = opened
        with closing(writer), suppress(OSError, asyncio.TimeoutError):
            while not stop.is_set() and not reader.at_eof():
                await asyncio.wait_for(reader.read(4096), 0.5)
        count(counts, "cut")
        await asyncio.sleep(0.5)


async def one_request(host: str, port: int, address: str, body: bytes, counts: dict) -> None:
    """One one-comment request on a new connection; counts its status (0: reset or timed out)."""
    try:
        with closing(Connection(host, port)) as connection:
            status, _, _ = await request_from(connection, address, "POST", "/v1/predict", body, timeout=60)
    except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
        status = 0
    count(counts, status)
    count(counts, "sent")


async def burster(host: str, port: int, stop: asyncio.Event, counts: dict, address: str, size: int = 1500,
                  rounds: int = 1000) -> None:
    """Rounds of `size` concurrent one-comment requests, each on a new connection, until stopped."""
    body = body_of(VICTIM)
    for _ in range(rounds):
        if stop.is_set():
            return
        await asyncio.gather(*(one_request(host, port, address, body, counts) for _ in range(size)))
        await asyncio.sleep(0.5)


async def prober(host: str, port: int, stop: asyncio.Event, counts: dict) -> None:
    """`GET /livez` on a fresh connection every 0.1 s: how many answered 200 within 2 s, and how many did not."""
    while not stop.is_set():
        try:
            with closing(Connection(host, port)) as connection:
                status, _, _ = await connection.request("GET", "/livez", timeout=2.0)
        except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
            status = 0
        count(counts, "ok" if status == 200 else "failed")
        await asyncio.sleep(0.1)


async def beside(args: argparse.Namespace, host: str, port: int, attack, clients: int, **options) -> dict:
    """The victim's latencies while `clients` copies of `attack` run, with the /livez prober's counts."""
    stop, counts, probes, failures = asyncio.Event(), {}, {}, {}
    address = options.pop("address", None)
    tasks = [asyncio.create_task(attack(host, port, stop, counts, address or source(i), **options))
             for i in range(clients)]
    tasks.append(asyncio.create_task(prober(host, port, stop, probes)))
    await asyncio.sleep(1.0)  # the attack under way first
    timed = await victim(host, port, args.seconds, args.max_requests, failures)
    stop.set()
    await asyncio.gather(*tasks)
    return {**summary(timed), "victim_failures": failures, "attack": counts, "livez": probes}


def summary(timed: tuple[list, list]) -> dict:
    """p50, p99 and max of the victim's latencies, and the p99 of its time in the server's queue."""
    latencies, queued = timed
    return {"queue_p99_ms": percentile(queued, 99) * 1000, "requests": len(latencies),
            "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000, "max_ms": max(latencies, default=float("nan")) * 1000}


async def mean_batch_ms(host: str, port: int, work) -> tuple[float, float, float]:
    """(the mean forward pass in ms, passes, ms per padded token) while `work` runs, from the server's /metrics."""
    before = await scrape(host, port)
    await work
    after = await scrape(host, port)
    passes = metric(after, "kold_span_batch_seconds_count") - metric(before, "kold_span_batch_seconds_count")
    seconds = metric(after, "kold_span_batch_seconds_sum") - metric(before, "kold_span_batch_seconds_sum")
    tokens = metric(after, "kold_span_batch_tokens_sum") - metric(before, "kold_span_batch_tokens_sum")
    return seconds / max(passes, 1) * 1000, passes, seconds / max(tokens, 1) * 1000


async def measure(args: argparse.Namespace, options: list[str], log: Path) -> dict:
    """Every phase of the module docstring on one `kold-span serve` child."""
    async with served(args.model, options, log) as (process, host, port):
        await victim(host, port, 2, 20)  # warm-up
        result: dict = {"idle": summary(await victim(host, port, args.seconds, args.max_requests))}
        result["rss_after_warm_up_mb"] = rss_mb(process.pid)

        per_comment = len(maximal(args.max_chars, 2)) - len(maximal(args.max_chars, 1))
        start = min(args.max_comments, args.max_request_chars // (2 * args.max_chars), args.max_bytes // per_comment)
        found = await largest_accepted(host, port, args.max_chars, max(start, 1))
        body = maximal(args.max_chars, found)
        result["maximal_request"] = {"comments": found, "chars_each": args.max_chars, "bytes": len(body)}
        alone = Connection(host, port)

        async def alone_runs() -> None:  # one after the other: the passes of one run are few for a stable mean
            for _ in range(args.slice_runs):
                await alone.request("POST", "/v1/predict", body, timeout=600)

        with closing(alone):
            mean_ms, passes, per_token = await mean_batch_ms(host, port, alone_runs())
        # One slice is a pass of the whole budget; a comment's last pass is shorter, so the mean pass is less.
        slice_ms = per_token * BUDGET
        result["slice"] = {"mean_ms": mean_ms, "passes": passes, "full_ms": slice_ms, "budget": BUDGET,
                           "runs": args.slice_runs}

        for clients in args.attackers:
            rows = result.setdefault("maximal", {})
            rows[str(clients)] = await beside(args, host, port, attacker, clients, body=body)
            rows[str(clients)]["target_ms"] = 2 * result["idle"]["p99_ms"] + slice_ms
        result["slow_headers"] = {**await beside(args, host, port, dribbler, args.dribblers), "clients": args.dribblers}
        result["slow_bodies"] = {**await beside(args, host, port, slow_body, args.slow_bodies),
                                 "clients": args.slow_bodies}
        result["idle_sockets"] = {**await beside(args, host, port, idle_socket, args.idle_sockets,
                                                 address=source(0)), "clients": args.idle_sockets}
        result["bursts"] = {**await beside(args, host, port, burster, 1, size=args.burst), "size": args.burst}

        phases = [*result["maximal"].values(), *(result[k] for k in ("slow_headers", "slow_bodies", "idle_sockets",
                                                                     "bursts"))]
        sent = sum(phase["attack"].get("sent", 0) for phase in phases)
        flood: dict = {}
        rounds = max(0, math.ceil((args.hostile - sent) / args.burst))
        body_one = body_of(VICTIM)
        for _ in range(rounds):  # bounded: as many rounds as the count still missing needs
            await asyncio.gather(*(one_request(host, port, source(1), body_one, flood) for _ in range(args.burst)))
        await asyncio.sleep(1.0)
        result["flood"] = flood
        result["hostile_requests"] = sent + flood.get("sent", 0)
        result["rss_after_hostile_mb"] = rss_mb(process.pid)
        return result


def livez(phase: dict) -> str:
    ok, failed = phase["livez"].get("ok", 0), phase["livez"].get("failed", 0)
    return f"{ok}/{ok + failed} ({100 * ok / max(ok + failed, 1):.0f}%)"


def statuses(counts: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=str) if k not in ("sent", "cut", "opened",
                                                                                            "refused"))


def attack_line(name: str, counts: dict) -> str:
    """One attacker's line: what its requests got, how many it sent, its connections opened, cut and refused."""
    return (f"  - {name}: {statuses(counts) or '-'}; requests {counts.get('sent', 0)}, connections opened "
            f"{counts.get('opened', 0)}, cut {counts.get('cut', 0)}, refused at connect {counts.get('refused', 0)}")


def render(r: dict, command: str, before: Optional[dict] = None) -> str:
    idle, big, sliced = r["idle"], r["maximal_request"], r["slice"]
    rows = [("idle service", idle, "", "")]
    for clients, phase in r["maximal"].items():
        ok = phase["p99_ms"] <= phase["target_ms"]
        rows.append((f"beside {clients} maximal client(s)", phase, livez(phase),
                     f"≤ {phase['target_ms']:.0f}: **{'met' if ok else 'not met'}**"))
    for key, name in (("slow_headers", "slow-header connections"), ("slow_bodies", "slow-body connections"),
                      ("idle_sockets", "idle sockets")):
        rows.append((f"beside {r[key]['clients']} {name}", r[key], livez(r[key]), ""))
    rows.append((f"beside bursts of {r['bursts']['size']} requests", r["bursts"], livez(r["bursts"]), ""))
    table = "\n".join(f"| {name} | {p['requests']} | {p['p50_ms']:.1f} | {p['p99_ms']:.1f} | {p['max_ms']:.1f} | "
                      f"{p.get('queue_p99_ms', float('nan')):.1f} | {statuses(p.get('victim_failures', {})) or '-'} | "
                      f"{probes or '-'} | {target or '-'} |"
                      for name, p, probes, target in rows)
    attacks = "\n".join(attack_line(name, r[key]["attack"]) for key, name in (
        ("slow_headers", "slow headers"), ("slow_bodies", "slow bodies"), ("idle_sockets", "idle sockets"),
        ("bursts", "bursts")))
    maximal_answers = "; ".join(f"{c} client(s): {statuses(p['attack'])}" for c, p in r["maximal"].items())
    growth = r["rss_after_hostile_mb"] / r["rss_after_warm_up_mb"]
    compare = ""
    if before is not None:
        lines = [("idle service", before["idle"], idle)] + \
            [(f"beside {c} maximal client(s)", before["maximal"][c], p) for c, p in r["maximal"].items()
             if c in before.get("maximal", {})]
        compare = f"""
Before and after, the same bench on the same machine (before: `{before['checkout']}`, run just before;
its one slice is a whole comment's forward pass, {before['slice']['mean_ms']:.0f} ms):

| victim's one-comment requests | p50 ms before | p99 ms before | p50 ms after | p99 ms after |
|---|---|---|---|---|
""" + "\n".join(f"| {name} | {b['p50_ms']:.1f} | {b['p99_ms']:.1f} | {a['p50_ms']:.1f} | {a['p99_ms']:.1f} |"
                for name, b, a in lines) + "\n"
    return f"""### Abuse: one-comment latency, /livez and memory beside hostile clients

Command: `{command}` — {r['machine']}, load average {r['load_before']} before and {r['load_after']}
after (`/proc/loadavg`, 1 minute; the machine is shared). Model: `{r['model']}`. Server options:
`{' '.join(r['options'])}`; checkout `{r['checkout']}`.

A maximal request: {big['comments']} comments of {big['chars_each']:,} characters, each with a title as long
({big['bytes']:,} bytes; the most that fits `--max-request-tokens` and `--max-comment-tokens`). Alone (sent
{sliced.get('runs', 1)} times, one after the other), it ran {sliced['passes']:.0f} forward passes of
{sliced['mean_ms']:.1f} ms on average (a comment's last pass is short);
one slice, a pass of the whole budget ({sliced['budget']:,} padded tokens, `--max-batch-tokens`), took
{sliced['full_ms']:.1f} ms (those passes' time per padded token × the budget). Each maximal client
keeps one in flight from its own address. The victim sends one comment at a time from 127.0.0.1; `/livez` is
asked every 0.1 s on a fresh connection (answered: 200 within 2 s). The p99 target is 2 × the idle p99 plus one
slice. Queue p99: the victim's time in the server's queue (its `x-queue-time`); the rest of its latency
is HTTP, parsing and the event loop.

| one-comment requests | requests | p50 ms | p99 ms | max ms | queue p99 ms | victim not 200 | /livez | p99 target |
|---|---|---|---|---|---|---|---|---|
{table}
{compare}
- The maximal clients' answers: {maximal_answers}.
- What the other attackers got (status: count; 0 is a reset or a timeout):
{attacks}
- Memory (RSS): {r['rss_after_warm_up_mb']:.0f} MB after warm-up, {r['rss_after_hostile_mb']:.0f} MB after
  {r['hostile_requests']:,} hostile requests (the phases above, then bursts: {statuses(r['flood']) or '-'}):
  **{growth:.2f}×** (target ≤ 1.2×: **{'met' if growth <= 1.2 else 'not met'}**).
"""


def checkout() -> str:
    """The commit the server ran (and `+` when the work tree differs from it)."""
    import subprocess

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "kold_span"],
                           capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", nargs="+", default=[str(ROOT / "checkpoints/demo/demo/model")])
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase's victim time")
    parser.add_argument("--max-requests", type=int, default=400, help="victim requests per phase at most")
    parser.add_argument("--slice-runs", type=int, default=3, help="times the maximal request is sent alone (phase 2)")
    parser.add_argument("--attackers", type=int, nargs="+", default=[1, 8], help="maximal clients, one phase each")
    parser.add_argument("--dribblers", type=int, default=200, help="slow-header connections")
    parser.add_argument("--slow-bodies", type=int, default=200, help="slow-body connections")
    parser.add_argument("--idle-sockets", type=int, default=1000, help="idle connections from one address")
    parser.add_argument("--burst", type=int, default=1500, help="concurrent requests of one burst round")
    parser.add_argument("--hostile", type=int, default=10_000, help="hostile requests in all before RSS is read")
    parser.add_argument("--body-timeout", type=float, default=5.0)
    parser.add_argument("--max-chars", type=int, default=20000)
    parser.add_argument("--max-comments", type=int, default=512)
    parser.add_argument("--max-request-chars", type=int, default=500_000)
    parser.add_argument("--max-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--header-timeout", type=float, default=5.0)
    parser.add_argument("--max-comment-tokens", type=int, help="passed to the server (default: its own)")
    parser.add_argument("--before", type=Path, help="the JSON of the same bench run on an older checkout")
    parser.add_argument("--section", default="serve-abuse", help="section of docs/SERVICE.md to (re)write")
    parser.add_argument("--no-docs", action="store_true", help="print, do not rewrite docs/SERVICE.md")
    args = parser.parse_args()
    options = ["--max-chars", str(args.max_chars), "--max-comments", str(args.max_comments),
               "--max-request-chars", str(args.max_request_chars), "--max-bytes", str(args.max_bytes),
               "--header-timeout", str(args.header_timeout), "--body-timeout", str(args.body_timeout),
               "--drain-delay", "0"]
    if args.threads:
        options += ["--threads", str(args.threads)]
    if args.max_comment_tokens:
        options += ["--max-comment-tokens", str(args.max_comment_tokens)]
    load_before = Path("/proc/loadavg").read_text().split()[0]
    with tempfile.TemporaryDirectory() as folder:
        result = asyncio.run(measure(args, options, Path(folder) / "serve.log"))
    result.update(machine=machine_line(), model=model_names(args.model), options=options, checkout=checkout(),
                  load_before=load_before, load_after=Path("/proc/loadavg").read_text().split()[0])
    save_results(args.section.replace("-", "_"), result, indent=2, ascii_only=True)
    before = json.loads(args.before.read_text()) if args.before else None
    command = "python bench/serve_abuse.py " + " ".join(sys.argv[1:])
    text = render(result, command.strip(), before)
    print(text)
    if not args.no_docs:
        write_section(args.section, text, doc=SERVICE_DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

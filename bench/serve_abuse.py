"""Is `kold-span serve` fair under abuse? One-comment latency while another client sends maximal requests.

In one run, over loopback only (127.0.0.1), against one `kold-span serve` child process:
  1. idle: a victim client sends one-comment requests, one at a time: p50/p99 latency;
  2. abuse: the same victim while an attacker keeps `--attackers` of the largest requests the
     service accepts in flight (comments of `--max-chars` characters with titles as long, as many
     as fit `--max-request-tokens`, found by halving before timing), each sent again as soon as
     it is answered;
  3. slow headers: the same victim while `--dribblers` connections send their headers a byte
     a second (the server closes them after `--header-timeout`; they reconnect);
  4. slow bodies (issue 56): the same victim while `--slow-bodies` connections send a request's
     headers, then its body a byte a second (the server answers 408 after `--body-timeout`; they
     reconnect).
In phases 3 and 4 a prober asks `GET /livez` on a fresh connection every 0.1 s (2 s timeout) and
counts the answers.

The target (issue 45): the victim's p99 under abuse within 2 × its idle p99 plus one batch time
(the mean of the server's batches during the abuse, from its /metrics). Every loop is bounded in
count and in time.

    python bench/serve_abuse.py --model checkpoints/demo/demo/model [--seconds 15] [--threads 1]

Results go to bench/results/SECTION.json and the SECTION (default `serve-abuse`) of docs/SERVICE.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import closing, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import machine_line, save_results, write_section  # noqa: E402
from serve_load import (SERVICE_DOC, Connection, body_of, metric, model_names, percentile, scrape,  # noqa: E402
                        served)

VICTIM = {"text": "오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다", "title": "프로야구 개막전 매진"}
FILLER = "저 의원은 진짜 말하는 것마다 역겹다 ㅋㅋ 이번 정책은 좀 멍청한 결정 같네요 "


def maximal(chars: int, count: int) -> bytes:
    """A request of `count` comments of `chars` characters, each with a title as long."""
    text = (FILLER * (chars // len(FILLER) + 1))[:chars]
    comments = [{"id": str(i), "text": text, "title": text} for i in range(count)]
    return json.dumps({"comments": comments}, ensure_ascii=False).encode("utf-8")


async def victim(host: str, port: int, seconds: float, max_requests: int) -> list[float]:
    """One-comment requests, one at a time, for `seconds` (at most `max_requests`): latencies of the 200s."""
    body = body_of(VICTIM)
    latencies = []
    deadline = time.perf_counter() + seconds
    with closing(Connection(host, port)) as connection:
        for _ in range(max_requests):
            if time.perf_counter() >= deadline:
                break
            sent = time.perf_counter()
            status, _, _ = await connection.request("POST", "/v1/predict", body, timeout=300)
            if status == 200:
                latencies.append(time.perf_counter() - sent)
            await asyncio.sleep(0.05)  # a steady trickle, not a flood
    return latencies


async def largest_accepted(host: str, port: int, chars: int, count: int) -> int:
    """The most comments of `chars` characters one request may hold (halving from `count`)."""
    with closing(Connection(host, port)) as connection:
        while count >= 1:
            try:
                status, _, body = await connection.request("POST", "/v1/predict", maximal(chars, count), timeout=600)
            except (OSError, ConnectionError):  # refused on its Content-Length while still being sent
                status, body = 413, b""
            if status == 200:
                return count
            if status != 413:
                raise SystemExit(f"a maximal request got {status}: {body[:300]!r}")
            count //= 2
    raise SystemExit("not even one comment of --max-chars characters fits --max-request-tokens")


async def attacker(host: str, port: int, body: bytes, stop: asyncio.Event, counts: dict) -> None:
    with closing(Connection(host, port)) as connection:
        while not stop.is_set():
            try:
                status, _, _ = await connection.request("POST", "/v1/predict", body, timeout=600)
            except (OSError, ConnectionError, asyncio.TimeoutError):
                status = 0
            counts[status] = counts.get(status, 0) + 1


async def open_or_count(host: str, port: int, counts: dict):
    """A connection's (reader, writer), or None after counting a refusal and waiting half a second."""
    try:
        return await asyncio.open_connection(host, port)
    except OSError:
        counts["refused"] = counts.get("refused", 0) + 1
        await asyncio.sleep(0.5)
        return None


async def dribbler(host: str, port: int, stop: asyncio.Event, counts: dict) -> None:
    """Sends a request's headers a byte a second; counts how often the server cut it off."""
    head = f"GET /readyz HTTP/1.1\r\nHost: {host}\r\nX-Slow: {'a' * 200}\r\n\r\n".encode()
    while not stop.is_set():
        opened = await open_or_count(host, port, counts)
        if opened is None:
            continue
        reader, writer = opened
        with closing(writer), suppress(OSError):  # a connection reset is a cut-off too
            for byte in head:
                if stop.is_set():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
                if reader.at_eof():
                    break
        counts["cut"] = counts.get("cut", 0) + 1


async def slow_body(host: str, port: int, stop: asyncio.Event, counts: dict) -> None:
    """Sends a request's headers, then its body a byte a second; counts how often the server cut it off."""
    head = (f"POST /v1/predict HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 1000\r\n\r\n").encode()
    while not stop.is_set():
        opened = await open_or_count(host, port, counts)
        if opened is None:
            continue
        reader, writer = opened
        with closing(writer), suppress(OSError):
            writer.write(head)
            for _ in range(1000):
                if stop.is_set() or reader.at_eof():
                    break
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(1.0)
        counts["cut"] = counts.get("cut", 0) + 1


async def prober(host: str, port: int, stop: asyncio.Event, counts: dict) -> None:
    """`GET /livez` on a fresh connection every 0.1 s: how many answered 200 within 2 s, and how many did not."""
    while not stop.is_set():
        try:
            with closing(Connection(host, port)) as connection:
                status, _, _ = await connection.request("GET", "/livez", timeout=2.0)
        except (OSError, ConnectionError, asyncio.TimeoutError):
            status = 0
        key = "ok" if status == 200 else "failed"
        counts[key] = counts.get(key, 0) + 1
        await asyncio.sleep(0.1)


async def beside(args: argparse.Namespace, host: str, port: int, attack, clients: int) -> tuple[list, dict, dict]:
    """The victim's latencies while `clients` copies of `attack` run, with the /livez prober's counts."""
    stop, counts, probes = asyncio.Event(), {}, {}
    tasks = [asyncio.create_task(attack(host, port, stop, counts)) for _ in range(clients)]
    tasks.append(asyncio.create_task(prober(host, port, stop, probes)))
    await asyncio.sleep(1.0)
    latencies = await victim(host, port, args.seconds, args.max_requests)
    stop.set()
    await asyncio.gather(*tasks)
    return latencies, counts, probes


def summary(latencies: list[float]) -> dict:
    return {"requests": len(latencies), "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000, "max_ms": max(latencies, default=float("nan")) * 1000}


async def measure(args: argparse.Namespace, options: list[str], log: Path) -> dict:
    """The victim's latencies idle, under abuse and beside slow-header connections, on a `kold-span serve` child."""
    async with served(args.model, options, log) as (_, host, port):
        await victim(host, port, 2, 20)  # warm-up
        result: dict = {"idle": summary(await victim(host, port, args.seconds, args.max_requests))}

        per_comment = len(maximal(args.max_chars, 2)) - len(maximal(args.max_chars, 1))
        start = min(args.max_comments, args.max_request_chars // (2 * args.max_chars), args.max_bytes // per_comment)
        count = await largest_accepted(host, port, args.max_chars, max(start, 1))
        body = maximal(args.max_chars, count)
        result["maximal_request"] = {"comments": count, "chars_each": args.max_chars, "bytes": len(body)}
        before = await scrape(host, port)
        stop, counts = asyncio.Event(), {}
        attackers = [asyncio.create_task(attacker(host, port, body, stop, counts)) for _ in range(args.attackers)]
        await asyncio.sleep(1.0)  # the attack under way first
        abused = await victim(host, port, args.seconds, args.max_requests)
        stop.set()
        await asyncio.gather(*attackers)
        after = await scrape(host, port)
        batches = metric(after, "kold_span_batch_seconds_count") - metric(before, "kold_span_batch_seconds_count")
        batch_s = (metric(after, "kold_span_batch_seconds_sum") - metric(before, "kold_span_batch_seconds_sum")) / \
            max(batches, 1)
        result["abuse"] = {**summary(abused), "attacker_answers": counts, "batches": batches,
                           "mean_batch_ms": batch_s * 1000}
        result["abuse"]["target_ms"] = 2 * result["idle"]["p99_ms"] + batch_s * 1000

        slow, counts, probes = await beside(args, host, port, dribbler, args.dribblers)
        result["slow_headers"] = {**summary(slow), "dribblers": args.dribblers, "cut_off": counts, "livez": probes}
        slow, counts, probes = await beside(args, host, port, slow_body, args.slow_bodies)
        result["slow_bodies"] = {**summary(slow), "clients": args.slow_bodies, "cut_off": counts, "livez": probes}
        return result


def render(r: dict, command: str) -> str:
    idle, abuse, slow, big = r["idle"], r["abuse"], r["slow_headers"], r["maximal_request"]
    bodies = r["slow_bodies"]
    ok = abuse["p99_ms"] <= abuse["target_ms"]
    return f"""### Abuse: one-comment latency beside a maximal client

Command: `{command}` — {r['machine']}, load average {r['load_before']} before and {r['load_after']}
after (`/proc/loadavg`, 1 minute; the machine is shared). Model: `{r['model']}`. Server options:
`{' '.join(r['options'])}`.

The attacker keeps {r['attackers']} maximal request(s) in flight: {big['comments']} comments of
{big['chars_each']:,} characters, each with a title as long ({big['bytes']:,} bytes; the most that fits
`--max-request-tokens` and `--max-comment-tokens`). The victim sends one comment at a time.

| victim's one-comment requests | requests | p50 ms | p99 ms | max ms |
|---|---|---|---|---|
| idle service | {idle['requests']} | {idle['p50_ms']:.1f} | {idle['p99_ms']:.1f} | {idle['max_ms']:.1f} |
| beside the maximal client | {abuse['requests']} | {abuse['p50_ms']:.1f} | {abuse['p99_ms']:.1f} | {abuse['max_ms']:.1f} |
| beside {slow['dribblers']} slow-header connections | {slow['requests']} | {slow['p50_ms']:.1f} | {slow['p99_ms']:.1f} | {slow['max_ms']:.1f} |
| beside {bodies['clients']} slow-body connections | {bodies['requests']} | {bodies['p50_ms']:.1f} | {bodies['p99_ms']:.1f} | {bodies['max_ms']:.1f} |

- Under abuse the p99 is **{abuse['p99_ms']:.1f} ms** against a target of {abuse['target_ms']:.1f} ms
  (2 × the idle p99 plus the mean batch, {abuse['mean_batch_ms']:.1f} ms over {abuse['batches']:.0f}
  batches): **{'met' if ok else 'not met'}**. The attacker's answers: {abuse['attacker_answers']}.
- The slow-header connections were cut off {slow['cut_off'].get('cut', 0)} times
  (`--header-timeout`); refused at connect: {slow['cut_off'].get('refused', 0)}. `/livez` beside them:
  {slow['livez'].get('ok', 0)} answered, {slow['livez'].get('failed', 0)} not.
- The slow-body connections were cut off {bodies['cut_off'].get('cut', 0)} times (`--body-timeout`);
  refused at connect: {bodies['cut_off'].get('refused', 0)}. `/livez` beside them:
  {bodies['livez'].get('ok', 0)} answered, {bodies['livez'].get('failed', 0)} not.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", nargs="+", default=[str(ROOT / "checkpoints/demo/demo/model")])
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase's victim time")
    parser.add_argument("--max-requests", type=int, default=400, help="victim requests per phase at most")
    parser.add_argument("--attackers", type=int, default=1, help="maximal requests kept in flight")
    parser.add_argument("--dribblers", type=int, default=200, help="slow-header connections")
    parser.add_argument("--slow-bodies", type=int, default=200, help="slow-body connections")
    parser.add_argument("--body-timeout", type=float, default=5.0)
    parser.add_argument("--max-chars", type=int, default=20000)
    parser.add_argument("--max-comments", type=int, default=512)
    parser.add_argument("--max-request-chars", type=int, default=500_000)
    parser.add_argument("--max-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--header-timeout", type=float, default=5.0)
    parser.add_argument("--max-comment-tokens", type=int, help="passed to the server (default: its own)")
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
    result.update(machine=machine_line(), model=model_names(args.model), options=options, attackers=args.attackers,
                  load_before=load_before, load_after=Path("/proc/loadavg").read_text().split()[0])
    save_results(args.section.replace("-", "_"), result, indent=2, ascii_only=True)
    command = "python bench/serve_abuse.py " + " ".join(sys.argv[1:])
    text = render(result, command.strip())
    print(text)
    if not args.no_docs:
        write_section(args.section, text, doc=SERVICE_DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

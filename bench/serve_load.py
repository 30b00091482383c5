"""Load on `kold-span serve` against the offline `kold-span predict` rate, on one machine and model.

In one run, over loopback only:
  1. the offline rate: `Predictor.predict_examples` at batch 32, the loop `kold-span predict` runs,
     and the time of one comment alone (tokenize, forward pass, decode);
  2. the service (a `kold-span serve` child process) under 1, 8 and 32 concurrent clients, each
     sending one comment per request and waiting for the answer: comments per second and
     p50/p95/p99 latency, and the mean batch the server formed (from its /metrics);
  3. an overload burst: requests arriving at four times the best measured rate, whatever the
     answers, while /health is polled and the server's memory (VmRSS) is sampled.

Every loop is bounded in count and in time. The comments are the made-up KOLD sample's 900
(comment, title) pairs, cycled; Kiwi's cache is warmed in both processes before timing.

    python bench/serve_load.py --model checkpoints/demo/demo/model [--seconds 20] [--burst-seconds 10]

Results go to bench/results/serve_load.json and the `serve-load` section of docs/SERVICE.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import machine_line, save_results, write_section  # noqa: E402

SERVICE_DOC = ROOT / "docs" / "SERVICE.md"
SAMPLE = ROOT / "data" / "sample" / "kold_sample.json"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), interpolated between the closest ranks (numpy's default); nan of none.

    Example:
        >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([5.0], 99), percentile([1.0, 2.0], 100)
        (2.5, 5.0, 2.0)
    """
    return float(np.percentile(values, q)) if values else float("nan")


def metric(text: str, name: str) -> float:
    """One unlabelled sample of a Prometheus text exposition (0 when absent).

    Example:
        >>> metric("# HELP x\\nkold_span_batch_comments_sum 12.0\\nkold_span_batch_comments_count 3.0\\n",
        ...        "kold_span_batch_comments_count")
        3.0
    """
    found = re.search(rf"^{re.escape(name)} ([0-9.eE+-]+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


# -- a small HTTP/1.1 client: keep-alive, Content-Length bodies, nothing else --------------------
class Connection:
    """One keep-alive HTTP/1.1 connection (the server always answers with Content-Length)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None

    async def request(self, method: str, path: str, body: bytes = b"",
                      timeout: float = 120.0) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self.writer.write(head.encode() + body)
        try:
            return await asyncio.wait_for(self._answer(), timeout)
        except BaseException:
            self.close()
            raise

    async def _answer(self) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", 0)))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Level:
    """One closed-loop run: c clients, each sending one comment and waiting for its answer."""

    clients: int
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    mean_batch: float = 0.0
    model_busy: float = 0.0  # share of the level's time the model thread spent in batches
    model_ms_per_comment: float = 0.0


def body_of(comment: dict) -> bytes:
    return json.dumps({"comments": [comment]}, ensure_ascii=False).encode("utf-8")


async def closed_loop(host: str, port: int, comments: list[dict], clients: int, seconds: float,
                      max_requests: int) -> Level:
    """`clients` workers post one comment at a time until `max_requests` or `seconds` have passed."""
    level = Level(clients)
    counter = iter(range(max_requests))
    start = time.perf_counter()
    deadline = start + seconds
    finished = [start]

    async def worker() -> None:
        with closing(Connection(host, port)) as connection:
            for i in counter:
                if time.perf_counter() >= deadline:
                    break
                sent = time.perf_counter()
                status, _, _ = await connection.request("POST", "/v1/predict", body_of(comments[i % len(comments)]))
                done = time.perf_counter()
                level.statuses[status] = level.statuses.get(status, 0) + 1
                if status == 200:
                    level.latencies.append(done - sent)
                finished[0] = max(finished[0], done)

    await asyncio.gather(*(worker() for _ in range(clients)))
    level.seconds = finished[0] - start
    return level


@dataclass
class Burst:
    offered_per_s: float
    sent: int = 0
    sending_s: float = 0.0  # how long sending took: sent / sending_s is the rate the client achieved
    statuses: dict[int, int] = field(default_factory=dict)
    lost: int = 0
    health: dict[int, int] = field(default_factory=dict)
    health_max_s: float = 0.0
    queue_max: float = 0.0
    seconds: float = 0.0


async def burst(host: str, port: int, comments: list[dict], rate: float, seconds: float, max_requests: int,
                max_open: int) -> Burst:
    """Open loop: request i starts at i / rate whatever the answers; /health and /metrics polled alongside."""
    result = Burst(rate)
    total = min(max_requests, int(rate * seconds))
    gate = asyncio.Semaphore(max_open)  # bounds the client's own sockets, not the offered rate
    start = time.perf_counter()
    stop = asyncio.Event()

    async def one(i: int) -> None:
        async with gate:
            with closing(Connection(host, port)) as connection:
                try:
                    status, _, _ = await connection.request("POST", "/v1/predict", body_of(comments[i % len(comments)]))
                    result.statuses[status] = result.statuses.get(status, 0) + 1
                except (OSError, asyncio.TimeoutError, ConnectionError, ValueError, asyncio.IncompleteReadError):
                    result.lost += 1

    async def watch() -> None:
        polls = 0
        with closing(Connection(host, port)) as health, closing(Connection(host, port)) as metrics:
            while not stop.is_set():
                asked = time.perf_counter()
                try:
                    status, _, _ = await health.request("GET", "/health", timeout=10)
                except (OSError, asyncio.TimeoutError, ConnectionError):
                    status = 0
                result.health[status] = result.health.get(status, 0) + 1
                result.health_max_s = max(result.health_max_s, time.perf_counter() - asked)
                polls += 1
                if polls % 5 == 0:
                    _, _, text = await metrics.request("GET", "/metrics", timeout=10)
                    result.queue_max = max(result.queue_max, metric(text.decode(), "kold_span_queue_comments"))
                await asyncio.sleep(0.1)

    watcher = asyncio.create_task(watch())
    tasks = []
    for i in range(total):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
        result.sent += 1
    result.sending_s = time.perf_counter() - start
    await asyncio.gather(*tasks)
    result.seconds = time.perf_counter() - start
    stop.set()
    await watcher
    return result


# -- the server process and its memory ------------------------------------------------------------
def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (Linux /proc)."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmRSS:")), 0.0)


class MemoryWatch:
    """Samples a process's RSS every 0.1 s on the event loop; `peak` since the last `reset`."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.task = pid, 0.0, None

    async def run(self) -> None:
        while True:
            self.peak = max(self.peak, rss_mb(self.pid))
            await asyncio.sleep(0.1)

    def reset(self) -> float:
        self.peak = rss_mb(self.pid)
        return self.peak


@asynccontextmanager
async def served(models: list[str], options: list[str], log: Path):
    """A `kold-span serve` child on 127.0.0.1 once its /health says 200: (process, host, port); stopped on leaving."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "kold_span.cli", "serve", "--model", *models,
                                    "--port", "0", *options], stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        deadline, found, connection = time.monotonic() + 600, None, None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"the server exited:\n{log.read_text(errors='replace')}")
            found = found or re.search(r"http://([0-9.]+):(\d+)/", log.read_text(errors="replace"))
            if found:
                connection = connection or Connection(found.group(1), int(found.group(2)))
                try:
                    if (await connection.request("GET", "/health", timeout=10))[0] == 200:
                        break
                except (OSError, ConnectionError, asyncio.TimeoutError):
                    connection.close()
            await asyncio.sleep(0.2)
        else:
            raise SystemExit("the server's /health did not say 200 within 600 s")
        connection.close()
        yield process, connection.host, connection.port
    finally:
        process.terminate()
        process.wait(120)


async def scrape(host: str, port: int) -> str:
    """The server's /metrics text."""
    with closing(Connection(host, port)) as connection:
        _, _, text = await connection.request("GET", "/metrics", timeout=30)
    return text.decode()


def model_names(models: list[str]) -> str:
    """The model directories, relative to the repository where they lie inside it."""
    return " ".join(os.path.relpath(m, ROOT) if Path(m).resolve().is_relative_to(ROOT) else m for m in models)


# -- the offline side -----------------------------------------------------------------------------
def offline(models: list[str], examples: list, batch_size: int, threads: Optional[int], device: str,
            runtime: str = "auto") -> dict:
    """Comments per second of predict's loop, and the median time of one comment alone."""
    import torch

    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.pipeline import RunOptions

    if threads:
        torch.set_num_threads(threads)
    predictor = load_predictor(models, RunOptions(device=device, runtime=runtime))
    list(predictor.predict_examples(examples, batch_size))  # warm-up, and Kiwi's cache
    started = time.perf_counter()
    n = sum(1 for _ in predictor.predict_examples(examples, batch_size))
    seconds = time.perf_counter() - started
    singles = []
    for i, example in enumerate(examples[:40] * 3):
        t = time.perf_counter()
        predictor.predict([example.text], [example.context])
        if i >= 40:  # the first 40 warm up batch-of-one shapes
            singles.append(time.perf_counter() - t)
    return {"comments": n, "seconds": round(seconds, 2), "comments_per_s": round(n / seconds, 1),
            "one_comment_ms": round(1000 * statistics.median(singles), 1), "torch_threads": torch.get_num_threads(),
            "device": device if device == "cpu" else torch.cuda.get_device_name(torch.device(device))}


async def measure(args: argparse.Namespace, comments: list[dict], offline_rate: float) -> dict:
    log = Path(tempfile.mkdtemp(prefix="kold-span-serve-load-")) / "serve.log"
    options = ["--max-wait-ms", str(args.max_wait_ms), "--max-batch-tokens", str(args.max_batch_tokens),
               "--max-queue", str(args.max_queue), "--max-comments", str(min(256, args.max_queue)),
               "--device", args.device, "--runtime", args.runtime] + (
                   ["--threads", str(args.threads)] if args.threads else [])
    async with served(args.model, options, log) as (process, host, port):
        memory = MemoryWatch(process.pid)
        memory_task = asyncio.create_task(memory.run())
        chunk = min(256, args.max_queue)
        with closing(Connection(host, port)) as warm:
            for start in range(0, len(comments), chunk):  # Kiwi's cache in the server, as offline
                payload = json.dumps({"comments": comments[start:start + chunk]}, ensure_ascii=False).encode()
                assert (await warm.request("POST", "/v1/predict", payload, timeout=600))[0] == 200
        baseline = memory.reset()
        levels = []
        for clients in args.clients:
            before = await scrape(host, port)
            level = await closed_loop(host, port, comments, clients, args.seconds, args.max_requests)
            after = await scrape(host, port)

            def delta(name: str) -> float:
                return metric(after, name) - metric(before, name)

            batches, scored = delta("kold_span_batch_comments_count"), delta("kold_span_batch_comments_sum")
            level.mean_batch = scored / batches if batches else 0.0
            level.model_busy = delta("kold_span_batch_seconds_sum") / level.seconds
            level.model_ms_per_comment = 1000 * delta("kold_span_batch_seconds_sum") / scored if scored else 0.0
            levels.append(level)
            print(f"clients {clients}: {len(level.latencies) / level.seconds:.1f} comments/s, "
                  f"p50 {1000 * percentile(level.latencies, 50):.1f} ms", flush=True)
        levels_peak = memory.peak
        capacity = max(len(lv.latencies) / lv.seconds for lv in levels)
        memory.reset()
        overload = await burst(host, port, comments, args.burst_factor * capacity, args.burst_seconds,
                               args.burst_max, args.burst_open)
        burst_peak = memory.peak
        await asyncio.sleep(1.0)
        after_burst = rss_mb(process.pid)
        memory_task.cancel()
    return {
        "server_options": options, "exit_code_after_sigterm": process.returncode,
        "levels": [{"clients": lv.clients, "requests": sum(lv.statuses.values()), "statuses": lv.statuses,
                    "seconds": round(lv.seconds, 2),
                    "comments_per_s": round(len(lv.latencies) / lv.seconds, 1),
                    **{f"p{q}_ms": round(1000 * percentile(lv.latencies, q), 1) for q in (50, 95, 99)},
                    "mean_batch": round(lv.mean_batch, 1), "model_busy": round(lv.model_busy, 3),
                    "model_ms_per_comment": round(lv.model_ms_per_comment, 2)} for lv in levels],
        "capacity_per_s": round(capacity, 1), "saturation_vs_offline": round(capacity / offline_rate, 3),
        "burst": {"offered_per_s": round(overload.offered_per_s, 1), "seconds": round(overload.seconds, 1),
                  "achieved_per_s": round(overload.sent / overload.sending_s, 1) if overload.sending_s else 0.0,
                  "sending_s": round(overload.sending_s, 1),
                  "sent": overload.sent, "statuses": overload.statuses, "lost": overload.lost,
                  "health": overload.health, "health_max_ms": round(1000 * overload.health_max_s, 1),
                  "queue_max": overload.queue_max},
        "memory_mb": {"after_warm_up": round(baseline), "peak_levels": round(levels_peak),
                      "peak_burst": round(burst_peak), "after_burst": round(after_burst)},
    }


def render(r: dict, command: str) -> str:
    off = r["offline"]
    rows = "\n".join(f"| {lv['clients']} | {lv['requests']} | {lv['comments_per_s']} | {lv['p50_ms']} | "
                     f"{lv['p95_ms']} | {lv['p99_ms']} | {lv['mean_batch']} | {100 * lv['model_busy']:.0f}% | "
                     f"{lv['model_ms_per_comment']} |" for lv in r["levels"])
    b = r["burst"]
    answered = sum(b["statuses"].values())
    five = sum(n for s, n in b["statuses"].items() if int(s) >= 500)
    c1 = next(lv for lv in r["levels"] if lv["clients"] == 1)
    health_ok = set(b["health"]) == {"200"} or set(b["health"]) == {200}
    mem = r["memory_mb"]
    return f"""## Load: the service against offline predict

Command: `{command}` — {r['machine']}, {off['torch_threads']} torch threads, model on {off['device']}, load average
{r['load_before']} before and {r['load_after']} after (`/proc/loadavg`, 1 minute; the machine is shared).
Model: `{r['model']}` ({r['encoder']}); {r['comments']} comments of the made-up KOLD sample with their
titles, cycled. Server options: `{' '.join(r['server_options'])}`; one comment per request.

Offline (`Predictor.predict_examples`, batch 32, the loop of `kold-span predict`): **{off['comments_per_s']}
comments/s** ({off['comments']} comments in {off['seconds']} s, {1000 / off['comments_per_s']:.2f} ms a comment); one
comment alone: {off['one_comment_ms']} ms (median of 80, after 40 to warm up). "Model busy" is the share of each level's time the
server's model thread spent running batches, "model ms / comment" that time per comment (both from
its /metrics): what the model cost, apart from HTTP.

| clients | requests | comments / s | p50 ms | p95 ms | p99 ms | mean batch | model busy | model ms / comment |
|---|---|---|---|---|---|---|---|---|
{rows}

- At saturation the service reaches **{100 * r['saturation_vs_offline']:.0f}%** of the offline rate
  (target ≥ 85%).
- p50 at one client is **{round(c1['p50_ms'] - off['one_comment_ms'], 1)} ms** over one comment alone
  (target ≤ 15 ms; the batcher's wait, {r['max_wait_ms']} ms, is part of it).
- Burst at {b['offered_per_s']} requests/s (4 × {r['capacity_per_s']}; the client reached {b['achieved_per_s']}/s),
  every request on a new connection: {b['sent']} sent in {b['sending_s']} s,
  {answered} answered ({', '.join(f"{n} × {s}" for s, n in sorted(b['statuses'].items()))}), **{five} with 5xx,
  {b['lost']} lost**; the queue peaked at {b['queue_max']:.0f} comments (--max-queue {r['max_queue']}).
  `/health` answered {', '.join(f"{n} × {s}" for s, n in sorted(b['health'].items()))} while polled every 0.1 s
  (slowest {b['health_max_ms']} ms){'' if health_ok else ' — NOT always 200'}.
- Server memory (RSS): {mem['after_warm_up']} MB after warm-up, peak {mem['peak_levels']} MB under the
  closed loops, peak {mem['peak_burst']} MB in the burst, {mem['after_burst']} MB a second after it.
- After SIGTERM the server exited with {r['exit_code_after_sigterm']}.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", default=[str(ROOT / "checkpoints/demo/demo/model")],
                        help="model directory (default: the one `make demo` trains)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit of each client level")
    parser.add_argument("--max-requests", type=int, default=4000, help="request limit of each client level")
    parser.add_argument("--burst-factor", type=float, default=4.0)
    parser.add_argument("--burst-seconds", type=float, default=10.0)
    parser.add_argument("--burst-max", type=int, default=30000, help="request limit of the burst")
    parser.add_argument("--burst-open", type=int, default=512, help="sockets the burst client may hold open")
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--max-batch-tokens", type=int, default=8192)
    parser.add_argument("--max-queue", type=int, default=256,
                        help="the server's --max-queue (smaller than its default, so the burst fills it)")
    parser.add_argument("--batch-size", type=int, default=32, help="offline batch size (predict's default)")
    parser.add_argument("--threads", type=int, help="torch's CPU threads, offline and in the server alike "
                                                    "(default: torch's choice)")
    parser.add_argument("--device", default="cpu", help="where the model runs, offline and in the server")
    parser.add_argument("--runtime", default="auto", help="torch, onnx or auto, offline and in the server alike")
    parser.add_argument("--section", default="serve-load",
                        help="section of docs/SERVICE.md to (re)write; also names bench/results/SECTION.json")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/SERVICE.md")
    args = parser.parse_args()
    for model in args.model:
        if not (Path(model) / "config.json").exists():
            raise SystemExit(f"{model} is not a model directory; train the demo model with `make demo`")

    from kold_span import corpora

    examples = corpora.read("kold", SAMPLE)
    comments = [{"id": e.id, "text": e.text, "title": e.context} for e in examples]
    load_before = Path("/proc/loadavg").read_text().split()[0]
    off = offline(args.model, examples, args.batch_size, args.threads, args.device, args.runtime)
    print(f"offline: {off['comments_per_s']} comments/s, one comment {off['one_comment_ms']} ms", flush=True)
    served = asyncio.run(measure(args, comments, off["comments_per_s"]))
    config = json.loads((Path(args.model[0]) / "config.json").read_text(encoding="utf-8"))
    encoder = config["encoder"]
    result = {
        "machine": machine_line(), "load_before": load_before,
        "load_after": Path("/proc/loadavg").read_text().split()[0], "model": model_names(args.model),
        "encoder": f"{encoder.get('model_type')}, {encoder.get('num_hidden_layers')} layers, hidden "
                   f"{encoder.get('hidden_size')}, windows of {config['max_length']} tokens",
        "comments": len(comments), "max_wait_ms": args.max_wait_ms, "max_queue": args.max_queue,
        "burst_seconds": args.burst_seconds, "runtime": args.runtime, "offline": off, **served,
    }
    save_results(args.section.replace("-", "_"), result, printed=True)
    if not args.no_docs:
        command = " ".join(["python bench/serve_load.py", *sys.argv[1:]])
        write_section(args.section, render(result, command), doc=SERVICE_DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())

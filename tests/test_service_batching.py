"""The service's batcher: token-budget cuts, the wait, the bounded queue, draining, failures kept apart."""
import threading
import time

import pytest

from kold_span.errors import Closed, QueueFull
from kold_span.service.batching import Batcher, Shape, fits, padded_tokens


def test_padded_tokens_pads_every_window_to_the_longest():
    # 1 + 3 windows, the longest has 50 tokens: 4 × 50
    assert padded_tokens([Shape(1, 10), Shape(3, 50)]) == 200
    assert padded_tokens([Shape(2, 7)]) == 14


@pytest.mark.parametrize("batch, item, budget, expected", [
    ([Shape(1, 30), Shape(1, 30)], Shape(1, 30), 90, True),   # 3 × 30 = 90, at the budget
    ([Shape(1, 30), Shape(1, 30)], Shape(1, 31), 90, False),  # 3 × 31 = 93
    ([Shape(1, 10)], Shape(2, 40), 120, True),                # 3 × 40 = 120
    ([Shape(1, 10)], Shape(2, 41), 120, False),               # a long one raises everyone's padding
    ([], Shape(9, 128), 10, True),                            # alone, a comment over the budget still runs
])
def test_fits_counts_the_padding_the_newcomer_causes(batch, item, budget, expected):
    assert fits(batch, item, budget) is expected


class Recorder:
    """A model stand-in: records each batch, answers with the payloads doubled, waits on a gate if told."""

    def __init__(self, gate=None):
        self.batches = []
        self.gate = gate
        self.started = threading.Event()

    def __call__(self, payloads):
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        self.batches.append(list(payloads))
        return [p * 2 for p in payloads]


def batcher(run, tokens=1000, wait=0.05, queue=100, shape=lambda p: Shape(1, 10)):
    b = Batcher(run=run, shape=lambda payloads: [shape(p) for p in payloads], max_batch_tokens=tokens,
                max_wait=wait, max_queue=queue)
    b.start()
    return b


def test_jobs_that_arrive_together_share_one_batch():
    run = Recorder()
    b = batcher(run)
    futures = b.submit([1, 2]) + b.submit([3])
    assert [f.result(5).value for f in futures] == [2, 4, 6]
    assert run.batches == [[3, 1, 2]]  # one batch; the smaller request's comment fills it first
    assert b.close(5)


def test_the_token_budget_cuts_batches_in_arrival_order():
    run = Recorder()
    # each comment: 1 window of 10 tokens; 30 tokens a batch → 3 comments a batch
    b = batcher(run, tokens=30)
    futures = b.submit(list(range(7)))
    assert [f.result(5).value for f in futures] == [2 * i for i in range(7)]
    assert run.batches == [[0, 1, 2], [3, 4, 5], [6]]
    assert b.close(5)


def test_a_lone_job_waits_at_most_max_wait():
    run = Recorder()
    b = batcher(run, wait=0.2)
    [future] = b.submit([1])
    done = future.result(5)
    assert 0.2 <= done.started - done.arrived < 2.0
    assert b.close(5)


def test_a_full_queue_refuses_all_of_a_request_and_says_when_to_retry():
    gate = threading.Event()
    run = Recorder(gate)
    b = batcher(run, queue=3, wait=0.0)
    first = b.submit([1])  # taken by the worker, which then waits on the gate
    assert run.started.wait(5)
    queued = b.submit([2, 3])
    assert b.queued == 2 and b.has_room()
    with pytest.raises(QueueFull, match=r"2 comments are waiting and the queue holds 3 \(--max-queue\); 2 more") as err:
        b.submit([4, 5])
    assert err.value.retry_after >= 1
    assert b.queued == 2  # nothing of the refused request was queued
    b.submit([6])
    assert not b.has_room()
    gate.set()
    assert [f.result(5).value for f in first + queued] == [2, 4, 6]
    assert b.close(5)


def test_close_finishes_the_queue_then_refuses():
    gate = threading.Event()
    run = Recorder(gate)
    b = batcher(run, wait=0.0)
    futures = b.submit([1])
    assert run.started.wait(5)
    futures += b.submit([2, 3])
    closer = threading.Thread(target=b.close, args=(10,))
    closer.start()
    time.sleep(0.05)
    with pytest.raises(Closed):
        b.submit([4])
    gate.set()
    closer.join(10)
    assert [f.result(0).value for f in futures] == [2, 4, 6]


def test_a_payload_that_fails_fails_alone():
    def run(payloads):
        if "bad" in payloads:
            raise ValueError("cannot score 'bad'")
        return [p.upper() for p in payloads]

    b = batcher(run)
    futures = b.submit(["a", "bad", "c"])
    assert futures[0].result(5).value == "A" and futures[2].result(5).value == "C"
    with pytest.raises(ValueError, match="cannot score 'bad'"):
        futures[1].result(5)
    assert b.close(5)


def test_a_payload_the_shape_function_rejects_fails_alone():
    def shape(payload):
        if payload < 0:
            raise ValueError("negative")
        return Shape(1, 10)

    b = batcher(Recorder(), shape=shape)
    futures = b.submit([1, -1, 3])
    assert futures[0].result(5).value == 2 and futures[2].result(5).value == 6
    with pytest.raises(ValueError, match="negative"):
        futures[1].result(5)
    assert b.close(5)


def test_a_cancelled_job_is_skipped():
    gate = threading.Event()
    run = Recorder(gate)
    b = batcher(run, wait=0.0)
    b.submit([1])
    assert run.started.wait(5)
    [gone, kept] = b.submit([2, 3])
    assert gone.cancel()  # its client went away while it waited
    gate.set()
    assert kept.result(5).value == 6
    assert b.close(5)
    assert run.batches == [[1], [3]]


def test_waiting_jobs_are_measured_together_and_only_once():
    calls = []

    def shapes(payloads):
        calls.append(list(payloads))
        return [Shape(1, 10) for _ in payloads]

    gate = threading.Event()
    run = Recorder(gate)
    b = Batcher(run=run, shape=shapes, max_batch_tokens=30, max_wait=0.0, max_queue=100)
    b.start()
    first = b.submit([0])
    assert run.started.wait(5)
    rest = b.submit([1, 2, 3, 4, 5])  # they wait while the model holds the first
    gate.set()
    assert [f.result(5).value for f in first + rest] == [0, 2, 4, 6, 8, 10]
    assert calls == [[0], [1, 2, 3, 4, 5]]  # the three that did not fit the first batch kept their shapes
    assert run.batches == [[0], [1, 2, 3], [4, 5]]
    assert b.close(5)


def test_a_small_request_takes_its_turn_before_the_rest_of_a_large_one():
    gate = threading.Event()
    run = Recorder(gate)
    b = batcher(run, tokens=20, wait=0.0)  # two comments a batch
    first = b.submit(["first"])
    assert run.started.wait(5)  # the model holds it
    large = b.submit([f"L{i}" for i in range(10)])
    small = b.submit(["S"])
    gate.set()
    assert [f.result(5).value for f in first + small + large]
    assert run.batches[0] == ["first"]
    assert run.batches[1] == ["S", "L0"]  # the small request did not wait for the 10 comments before it
    assert [p for batch in run.batches[1:] for p in batch if p != "S"] == [f"L{i}" for i in range(10)]
    assert b.close(5)


def test_cancel_takes_a_gone_clients_comments_out_of_the_queue():
    gate = threading.Event()
    run = Recorder(gate)
    b = batcher(run, tokens=10, wait=0.0)
    b.submit(["first"])
    assert run.started.wait(5)
    gone = b.submit(["g1", "g2", "g3"])
    kept = b.submit(["k"])
    assert b.queued == 4
    assert b.cancel(gone) == 3 and b.queued == 1
    assert all(f.cancelled() for f in gone)
    gate.set()
    assert kept[0].result(5).value == "kk"
    assert b.close(5)
    assert run.batches == [["first"], ["k"]]  # none of the gone client's comments was computed


def test_a_request_over_the_token_budget_fails_whole_before_any_of_it_runs():
    from kold_span.errors import RequestTooLarge

    run = Recorder()
    b = Batcher(run=run, shape=lambda ps: [Shape(1, 10) for _ in ps], max_batch_tokens=10, max_wait=0.0,
                max_queue=100, max_request_tokens=25)
    b.start()
    over = b.submit([1, 2, 3])  # 30 tokens
    within = b.submit([4, 5])  # 20 tokens
    for future in over:
        with pytest.raises(RequestTooLarge, match=r"comments: 30 tokens, over the limit of 25 per request "
                                                  r"\(--max-request-tokens\)"):
            future.result(5)
    assert [f.result(5).value for f in within] == [8, 10]
    assert b.close(5)
    assert sorted(p for batch in run.batches for p in batch) == [4, 5]
    assert b.queued == 0


def test_the_queue_bound_holds_while_the_worker_measures():
    measuring, release = threading.Event(), threading.Event()

    def shapes(payloads):
        if payloads[0] == "held":
            measuring.set()
            assert release.wait(10)
        return [Shape(1, 10) for _ in payloads]

    run = Recorder()
    b = Batcher(run=run, shape=shapes, max_batch_tokens=10, max_wait=0.0, max_queue=4)
    b.start()
    b.submit(["held", "b", "c", "d"])
    assert measuring.wait(5)  # the worker holds the four jobs while their shapes are measured
    assert b.queued == 4
    with pytest.raises(QueueFull):
        b.submit(["e"])
    seen = []
    release.set()
    deadline = time.monotonic() + 5
    while len(run.batches) < 4 and time.monotonic() < deadline:
        seen.append(b.queued)
        try:
            b.submit(["x"])
        except QueueFull:
            pass
        time.sleep(0.001)
    assert max(seen) <= 4 and b.queued <= 4
    assert b.close(5)


def test_with_a_size_the_request_with_less_work_waiting_goes_first():
    gate = threading.Event()
    run = Recorder(gate)
    b = Batcher(run=run, shape=lambda ps: [Shape(1, 10) for _ in ps], max_batch_tokens=10, max_wait=0.0,
                max_queue=100, size=len)
    b.start()
    b.submit(["first"])
    assert run.started.wait(5)
    long_one = b.submit(["x" * 5000])  # one comment, but 5000 characters of it
    short_one = b.submit(["short"])
    gate.set()
    assert short_one[0].result(5) and long_one[0].result(5)
    assert run.batches == [["first"], ["short"], ["x" * 5000]]
    assert b.close(5)


def test_a_request_holding_a_comment_over_the_comment_budget_fails_whole():
    from kold_span.errors import CommentTooLarge

    run = Recorder()
    b = Batcher(run=run, shape=lambda ps: [Shape(len(p), 10) for p in ps], max_batch_tokens=100, max_wait=0.0,
                max_queue=100, max_comment_tokens=30)
    b.start()
    refused = b.submit(["ab", "abcd"])  # 20 and 40 tokens: the second is over 30
    kept = b.submit(["abc"])  # 30 tokens: at the limit
    for future in refused:
        with pytest.raises(CommentTooLarge, match=r"one comment is 40 tokens .* over the limit of 30 per comment "
                                                  r"\(--max-comment-tokens\)"):
            future.result(5)
    assert kept[0].result(5).value == "abcabc"
    assert b.close(5)
    assert run.batches == [["abc"]]


def test_a_short_requests_batch_takes_no_long_comment_of_another_request():
    gate = threading.Event()
    run = Recorder(gate)
    shapes = {"first": Shape(1, 10), "short": Shape(1, 10), "long": Shape(50, 10), "mate": Shape(1, 10)}
    sizes = {"first": 10, "short": 10, "long": 5000, "mate": 12}
    b = Batcher(run=run, shape=lambda ps: [shapes[p] for p in ps], max_batch_tokens=1000, max_wait=0.0,
                max_queue=100, size=sizes.get)
    b.start()
    b.submit(["first"])
    assert run.started.wait(5)
    b.submit(["long"]), b.submit(["short"]), b.submit(["mate"])
    gate.set()
    deadline = time.monotonic() + 5
    while len(run.batches) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    # the budget (1000) would take all three; the 50-window comment runs apart, not in the short ones' batch
    assert run.batches == [["first"], ["short", "mate"], ["long"]]
    assert b.close(5)


def test_one_client_holds_at_most_its_share_of_the_queue_and_others_still_get_in():
    gate = threading.Event()
    run = Recorder(gate)
    b = Batcher(run=run, shape=lambda payloads: [Shape(1, 10) for _ in payloads], max_batch_tokens=1000,
                max_wait=0.0, max_queue=10, max_client_queue=4)
    b.start()
    first = b.submit([0], client="flood")  # taken by the worker, which then waits on the gate
    assert run.started.wait(5)
    flood = b.submit([1, 2, 3], client="flood") + b.submit([4], client="flood")
    with pytest.raises(QueueFull, match=r"client flood: 4 comments waiting; its share of the queue is 4 "
                                        r"\(--max-client-queue\)"):
        b.submit([5], client="flood")
    others = b.submit([6, 7, 8, 9], client="victim") + b.submit([10], client=None)  # no client: the queue's bound
    assert b.queued == 9
    gate.set()
    assert [f.result(5).value for f in first + flood + others] == [0, 2, 4, 6, 8, 12, 14, 16, 18, 20]
    assert b.submit([5], client="flood")[0].result(5).value == 10  # its comments ran: room again
    assert b.close(5)


def wait_until(condition, seconds=5.0):
    """Poll `condition` until it holds or `seconds` pass (a bounded loop); whether it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True


def test_comments_are_measured_while_the_model_runs_another_batch():
    gate = threading.Event()
    run = Recorder(gate)
    measured = threading.Event()

    def shapes(payloads):
        if "b" in payloads:
            measured.set()
        return [Shape(1, 10) for _ in payloads]

    b = Batcher(run=run, shape=shapes, max_batch_tokens=100, max_wait=0.0, max_queue=100)
    b.start()
    first = b.submit(["a"])
    assert run.started.wait(5)  # the model thread holds "a"
    later = b.submit(["b"])
    # measured on its own thread: before, the model thread measured, so "b" waited for "a"'s batch to end
    assert measured.wait(5)
    assert b.measured == 1 and run.batches == []
    gate.set()
    assert [f.result(5).value for f in first + later] == ["aa", "bb"]
    assert b.close(5)


def test_a_small_request_is_measured_between_the_comments_of_a_large_one():
    calls, held, release = [], threading.Event(), threading.Event()

    def shapes(payloads):
        calls.append(list(payloads))
        if payloads[0] == "big0":
            held.set()
            assert release.wait(10)
        return [Shape(1, 10) for _ in payloads]

    b = Batcher(run=Recorder(), shape=shapes, max_batch_tokens=100, max_wait=0.0, max_queue=100,
                size=lambda p: 20_000 if p.startswith("big") else len(p))
    b.start()
    big = b.submit(["big0", "big1", "big2"])
    assert held.wait(5)  # the first big comment is being measured
    small = b.submit(["small"])
    release.set()
    assert [f.result(5).value for f in big + small]
    # each big comment is measured alone (more characters than one measuring call takes); the small request
    # waited for one of them, not for all three
    assert calls == [["big0"], ["small"], ["big1"], ["big2"]]
    assert b.close(5)


def test_a_small_request_is_measured_and_answered_while_a_large_ones_measuring_call_runs():
    held, release = threading.Event(), threading.Event()

    def shapes(payloads):
        if "big" in payloads:
            held.set()
            assert release.wait(10)
        return [Shape(1, 10) for _ in payloads]

    b = Batcher(run=Recorder(), shape=shapes, max_batch_tokens=100, max_wait=0.0, max_queue=100,
                size=lambda p: 20_000 if p == "big" else len(p))
    b.start()
    big = b.submit(["big"])
    assert held.wait(5)  # one measuring call holds the large comment
    # the quick thread measures it and the model runs it: before, it waited for the large comment's call
    assert b.submit(["small"])[0].result(5).value == "smallsmall"
    assert not big[0].done()
    release.set()
    assert big[0].result(5).value == "bigbig"
    assert b.close(5)


def test_the_quick_thread_leaves_large_requests_to_the_other():
    threads = []

    def shapes(payloads):
        threads.append((threading.current_thread().name, list(payloads)))
        return [Shape(1, 10) for _ in payloads]

    b = Batcher(run=Recorder(), shape=shapes, max_batch_tokens=100, max_wait=0.0, max_queue=100, size=len)
    b.start()
    futures = [b.submit(["x" * 9000])[0] for _ in range(5)]  # each over the quick size, one a call
    assert all(f.result(5) for f in futures)
    assert b.close(5)
    assert len(threads) == 5 and {name for name, _ in threads} == {"kold-span-measure"}


class Slices:
    """A stand-in for `ServedModel.slices`: a long payload as `count` passes of `tokens`, each logged."""

    def __init__(self, log, count=3, tokens=10, gate=None):
        self.log, self.count, self.tokens, self.gate = log, count, tokens, gate
        self.running = threading.Event()

    def __call__(self, payload, budget):
        assert self.tokens <= budget
        for k in range(self.count):
            yield self.tokens
            self.running.set()
            if self.gate is not None and k == 0:
                assert self.gate.wait(10)
            self.log.append(f"{payload}:{k}")
        return payload * 2


def long_batcher(log, slices, budget=10):
    """A batcher whose "L…" payloads are 3 windows (over a budget of 10 tokens: run in slices)."""
    def run(payloads):
        log.append(list(payloads))
        return [p * 2 for p in payloads]

    b = Batcher(run=run, shape=lambda ps: [Shape(3 if p.startswith("L") else 1, 10) for p in ps],
                max_batch_tokens=budget, max_wait=0.0, max_queue=100, slices=slices)
    b.start()
    return b


def test_a_long_comment_runs_in_slices_with_other_requests_batches_between_them():
    log, gate = [], threading.Event()
    slices = Slices(log, gate=gate)
    b = long_batcher(log, slices)
    stats = []
    b.on_batch = stats.append
    long_one = b.submit(["L"], client="attacker")
    assert slices.running.wait(5)  # its first slice holds the model thread
    short = b.submit(["s"], client="victim")
    assert wait_until(lambda: b.measured == 1)
    gate.set()
    assert short[0].result(5).value == "ss" and long_one[0].result(5).value == "LL"
    # the short request ran after the slice that was running when it came, before the next one
    assert log == ["L:0", ["s"], "L:1", "L:2"]
    assert b.close(5)
    # each slice is reported as a batch of its tokens; the comment counts once, with its last slice
    assert [(s.comments, s.tokens) for s in stats] == [(0, 10), (1, 10), (0, 10), (1, 10)]


def test_without_slices_a_long_comment_runs_whole():
    log = []
    b = long_batcher(log, slices=None)
    assert b.submit(["L"])[0].result(5).value == "LL"
    assert log == [["L"]]
    assert b.close(5)


def test_a_long_comments_slices_stop_when_its_client_leaves():
    log, gate = [], threading.Event()
    slices = Slices(log, count=5, gate=gate)
    b = long_batcher(log, slices)
    [gone] = b.submit(["L"])
    assert slices.running.wait(5)
    assert b.cancel([gone]) == 1
    gate.set()
    assert b.submit(["s"])[0].result(5).value == "ss"
    assert b.close(5)
    assert log[0] == "L:0" and "L:4" not in log and ["s"] in log  # what was left of it never ran


def test_a_long_comment_that_fails_fails_alone():
    def slices(payload, budget):
        yield 10
        raise ValueError("cannot score it")

    log = []
    b = long_batcher(log, slices)
    [bad] = b.submit(["L"])
    [good] = b.submit(["s"])
    with pytest.raises(ValueError, match="cannot score it"):
        bad.result(5)
    assert good.result(5).value == "ss"
    assert b.close(5)


def test_two_long_comments_run_one_after_the_other_with_short_batches_between_slices():
    log = []
    b = long_batcher(log, Slices(log, count=2))
    gate = threading.Event()
    held = Slices(log, count=1, gate=gate)
    b.slices = lambda p, budget: held(p, budget) if p == "Lfirst" else Slices(log, count=2)(p, budget)
    [first] = b.submit(["Lfirst"])
    assert held.running.wait(5)
    futures = b.submit(["L1"], client="a") + b.submit(["L2"], client="b")
    assert wait_until(lambda: b.measured == 2)
    gate.set()
    assert [f.result(5).value for f in [first, *futures]] == ["LfirstLfirst", "L1L1", "L2L2"]
    assert b.close(5)
    assert log == ["Lfirst:0", "L1:0", "L1:1", "L2:0", "L2:1"]


def test_a_small_request_being_measured_when_a_slice_ends_runs_before_the_next_slice():
    log, measuring, release, waiting = [], threading.Event(), threading.Event(), threading.Event()

    def shapes(payloads):
        if "s" in payloads:
            measuring.set()
            assert release.wait(10)
        return [Shape(3 if p.startswith("L") else 1, 10) for p in payloads]

    class Held(Slices):
        def __call__(self, payload, budget):
            for k in range(self.count):
                yield self.tokens
                self.running.set()
                if k == 0:  # the small request comes, and is on the quick thread, while this slice runs
                    assert measuring.wait(10)
                self.log.append(f"{payload}:{k}")
            return payload * 2

    def run(payloads):
        log.append(list(payloads))
        return [p * 2 for p in payloads]

    b = Batcher(run=run, shape=shapes, max_batch_tokens=10, max_wait=0.0, max_queue=100, slices=Held(log))
    waits = b._wait_for_quick

    def wait_for_quick():
        waiting.set()
        return waits()

    b._wait_for_quick = wait_for_quick
    b.start()
    [long_one] = b.submit(["L"], client="attacker")
    assert b.slices.running.wait(5)
    [short] = b.submit(["s"], client="victim")
    waiting.wait(5)  # the model thread waits for the quick thread (without that wait, this gives up after 5 s)
    release.set()
    assert short.result(5).value == "ss" and long_one.result(5).value == "LL"
    assert log == ["L:0", ["s"], "L:1", "L:2"]
    assert b.close(5)


def test_merging_and_decoding_is_a_turn_of_its_own_and_no_batch():
    log, stats = [], []

    def slices(payload, budget):
        for k in range(2):
            yield 10
            log.append(f"{payload}:{k}")
        yield 0
        log.append(f"{payload}:decoded")
        return payload * 2

    b = long_batcher(log, slices)
    b.on_batch = stats.append
    assert b.submit(["L"])[0].result(5).value == "LL"
    assert b.close(5)
    assert log == ["L:0", "L:1", "L:decoded"]
    # two passes reported; the comment counts with the last pass, the decoding turn is no batch
    assert [(s.comments, s.tokens) for s in stats] == [(0, 10), (1, 10)]


def test_on_idle_runs_when_the_queue_drains_and_at_most_once_every_idle_every(monkeypatch):
    from kold_span.service import batching

    idled = []
    b = Batcher(run=Recorder(), shape=lambda ps: [Shape(1, 4) for _ in ps], max_batch_tokens=64, max_wait=0.0,
                max_queue=8, on_idle=lambda: idled.append(b.queued))
    b.start()
    assert wait_until(lambda: idled == [0])  # nothing waits at the start: idle once
    assert b.submit(["a"])[0].result(5).value == "aa"
    assert b.submit(["b"])[0].result(5).value == "bb"
    assert idled == [0]  # drained twice within IDLE_EVERY seconds: not called again
    monkeypatch.setattr(batching, "IDLE_EVERY", 0.0)
    assert b.submit(["c"])[0].result(5).value == "cc"
    assert wait_until(lambda: len(idled) == 2) and idled == [0, 0]  # always with nothing waiting
    time.sleep(0.05)  # not a timing: room for a call that must not come
    assert idled == [0, 0]  # once a drain, not again until a request comes
    assert b.close(5)


def test_a_failing_idle_callback_is_logged_and_the_batcher_goes_on():
    def broken():
        raise RuntimeError("no")

    b = Batcher(run=Recorder(), shape=lambda ps: [Shape(1, 4) for _ in ps], max_batch_tokens=64, max_wait=0.0,
                max_queue=8, on_idle=broken)
    b.start()
    assert b.submit(["a"])[0].result(5).value == "aa"
    assert b.close(5)


def test_the_service_hands_freed_memory_back_where_the_c_library_can():
    import platform

    from kold_span.service.lifecycle import release_memory

    assert release_memory() is (platform.libc_ver()[0] == "glibc")


def test_the_quick_thread_stays_busy_while_the_other_measures_a_large_request():
    # the flag the model thread waits on before a slice: the other thread starting a call must not clear it
    events = {name: threading.Event() for name in ("hold", "s", "big")}
    releases = {name: threading.Event() for name in events}

    def shapes(payloads):
        for name in events:
            if name in payloads:
                events[name].set()
                assert releases[name].wait(10)
        return [Shape(1, 10) for _ in payloads]

    b = Batcher(run=Recorder(), shape=shapes, max_batch_tokens=100, max_wait=0.0, max_queue=100,
                size=lambda p: {"hold": 3000, "big": 20_000}.get(p, len(p)))
    b.start()
    futures = b.submit(["hold"])  # over the quick size: the other thread measures it
    assert events["hold"].wait(5)
    futures += b.submit(["s"])  # the other thread is busy: the quick one takes it
    assert events["s"].wait(5) and b._quick_busy
    futures += b.submit(["big"])
    releases["hold"].set()  # the other thread goes on to the large request while "s" is still measured
    assert events["big"].wait(5)
    assert b._quick_busy
    for release in releases.values():
        release.set()
    assert all(f.result(5) for f in futures)
    assert not b._quick_busy
    assert b.close(5)

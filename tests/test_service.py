"""`kold-span serve` over HTTP: the same answers as `predict`, Perspective's format, limits, load shedding,
health, metrics, a fuzzed body never being a 500, and a clean drain on SIGTERM."""
import gc
import json
import re
import signal
import socket
import threading
import time
import types

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kold_span.cli import main
from kold_span.inference.ensemble import load_predictor
from kold_span.inference.predictor import Predictor, PredictorSettings
from kold_span.models.tasks import Task
from kold_span.service.app import Settings, create_app
from kold_span.service.requests import Limits
from kold_span.text.normalize import STEPS
from service_model import get, post, running_server, tiny_model, with_thresholds

COMMENTS = [  # comments of the fixture the tiny model was trained on, and two it never saw
    {"id": "a1", "text": "저 의원은 진짜 멍청하다. 말하는 것마다 역겹다 ㅋㅋ", "title": "장관 후보자 청문회 파행"},
    {"text": "오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다", "title": "프로야구 개막전 매진"},
    {"id": "a3", "text": "꺼져라 진짜", "context": ["A: 복귀 축하해요", "B: 기다렸어요"]},
    {"id": "a4", "text": "이번 정책은 좀 멍청한 결정 같네요"},
    {"id": "long", "text": " ".join(["오늘 경기 정말 재밌었어요"] * 30 + ["미친놈 아니냐 이거"])},
]


@pytest.fixture(scope="module")
def model_dir():
    return tiny_model()


def wait_ready(client, timeout=300):
    deadline = time.monotonic() + timeout
    while client.get("/health").status_code != 200:
        assert time.monotonic() < deadline, "/health never said 200"
        time.sleep(0.1)


def serving(load, **settings):
    """A TestClient (lifespan running) for an app over `load`, once /health says 200."""
    client = TestClient(create_app(Settings(**settings), load))
    client.__enter__()
    wait_ready(client)
    return client


@pytest.fixture(scope="module")
def client(model_dir):
    client = serving(lambda: load_predictor([model_dir]), models=(str(model_dir),))
    yield client
    client.__exit__(None, None, None)


def test_predict_answers_what_the_predict_command_writes(client, model_dir, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in COMMENTS), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", str(model_dir), "--input", str(source), "--output", str(out), "--quiet"]) == 0
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    response = client.post("/v1/predict", json={"comments": COMMENTS})
    assert response.status_code == 200
    assert response.json()["predictions"] == written
    assert [p["id"] for p in written] == ["a1", "2", "a3", "a4", "long"]  # no id: its position, as predict numbers lines
    long = written[-1]
    assert len(long["text"]) > 5 * 64  # many windows of this model, one answer
    assert all(long["text"][s["start"]:s["end"]] == s["text"] for s in long["spans"])


def test_analyze_speaks_perspective(client):
    comment = COMMENTS[0]
    [record] = client.post("/v1/predict", json={"comments": [comment]}).json()["predictions"]
    body = {"comment": {"text": comment["text"]}, "context": {"entries": [{"text": comment["title"]}]},
            "requestedAttributes": {"TOXICITY": {}, "OFF": {"scoreThreshold": 0.5}}, "spanAnnotations": True,
            "languages": ["ko"], "doNotStore": True, "clientToken": "req-7"}
    response = client.post("/v1alpha1/comments:analyze", json=body)
    assert response.status_code == 200
    scores = response.json()["attributeScores"]
    assert scores["TOXICITY"] == scores["OFF"]
    assert scores["TOXICITY"]["summaryScore"] == {"value": record["labels"]["OFF"]["probs"]["true"],
                                                  "type": "PROBABILITY"}
    spans = scores["TOXICITY"]["spanScores"]
    assert [(s["begin"], s["end"]) for s in spans] == [(s["start"], s["end"]) for s in record["spans"]]
    assert [comment["text"][s["begin"]:s["end"]] for s in spans] == ["멍청하다", "역겹다"]  # character offsets
    assert response.json()["languages"] == ["ko"] and response.json()["clientToken"] == "req-7"
    unknown = client.post("/v1alpha1/comments:analyze", json={**body, "requestedAttributes": {"INSULT": {}}})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == ("requestedAttributes: this model has no attribute INSULT; "
                                                  "it has OFF, TOXICITY")


def test_annotator_traits_need_an_annotator_conditioned_model(client):
    answer = client.post("/v1/predict", json={"comments": [{"text": "바보"}], "perspective": {"age": 23}})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "perspective"
    assert "not trained annotator-conditioned" in answer.json()["error"]["message"]


def test_an_attribute_file_renames_the_attributes(model_dir, tmp_path):
    mapping = tmp_path / "attributes.yaml"
    mapping.write_text("attributes:\n  INSULT: {task: OFF, label: 'true', spans: OFF_span}\n", encoding="utf-8")
    client = serving(lambda: load_predictor([model_dir]), attributes_file=str(mapping))
    try:
        assert client.get("/info").json()["attributes"] == {"INSULT": {"task": "OFF", "label": "true",
                                                                       "spans": "OFF_span"}}
        body = {"comment": {"text": "꺼져라 진짜"}, "requestedAttributes": {"INSULT": {}}}
        assert client.post("/v1alpha1/comments:analyze", json=body).status_code == 200
        body["requestedAttributes"] = {"TOXICITY": {}}
        assert "it has INSULT" in client.post("/v1alpha1/comments:analyze", json=body).json()["error"]["message"]
    finally:
        client.__exit__(None, None, None)


def test_info_says_the_threshold_an_ensemble_decodes_with(model_dir, tmp_path):
    """Members tuned at 0.3 and 0.6 on P(B) + P(I): the ensemble cuts at their mean, and /info says so."""
    members = [with_thresholds(model_dir, tmp_path / f"m{i}", {"OFF_span": [t]}) for i, t in enumerate((0.3, 0.6))]
    pair = serving(lambda: load_predictor(members), models=tuple(map(str, members)))
    try:
        tasks = {t["name"]: t["decision"] for t in pair.get("/info").json()["tasks"]}
    finally:
        pair.__exit__(None, None, None)
    # exactly what it compares with: (0.3 + 0.6) / 2 in float64 (the page shows 0.45)
    assert tasks == {"OFF": {"rule": "most probable label"},
                     "OFF_span": {"rule": "P(B)+P(I) >= t", "threshold": 0.44999999999999996}}


def test_several_model_directories_make_an_ensemble(client, model_dir):
    pair = serving(lambda: load_predictor([model_dir, model_dir]), models=(str(model_dir),) * 2)
    try:
        assert pair.get("/info").json()["encoder"]["ensemble_members"] == 2
        one = client.post("/v1/predict", json={"comments": COMMENTS[:3]}).json()
        two = pair.post("/v1/predict", json={"comments": COMMENTS[:3]}).json()
        assert two == one  # the mean of a model and itself
    finally:
        pair.__exit__(None, None, None)


def test_health_info_metrics_and_timing_headers(client, model_dir):
    health = client.get("/health")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    info = client.get("/info").json()
    assert [t["name"] for t in info["tasks"]] == ["OFF", "OFF_span"]
    assert [t["decision"] for t in info["tasks"]] == [{"rule": "most probable label"}, {"rule": "most probable tag"}]
    assert info["attributes"]["TOXICITY"] == {"task": "OFF", "label": "true", "spans": "OFF_span"}
    assert info["encoder"]["model_type"] == "bert" and info["encoder"]["max_length"] == 64
    # torch float32; the tiny config has no normalize section, so it normalizes by every step (the default)
    assert info["runtime"] == ["fp32"] and info["normalize"] == [list(STEPS)]
    assert info["limits"] == {"max_bytes": 4 * 1024 * 1024, "max_comments": 512, "max_chars": 20000,
                              "max_request_chars": 500_000, "max_context_turns": 50, "max_id_chars": 128,
                              "max_queue": 1024, "max_client_queue": 512, "max_request_tokens": 65536, "max_comment_tokens": None, "max_headers": 100,
                              "max_connections": 1000, "header_timeout": 10.0, "max_header_bytes": 16384,
                              "keep_alive": 5, "max_client_connections": None, "body_timeout": 60.0}
    assert {"python", "torch", "transformers", "fastapi", "uvicorn"} <= set(info["versions"])
    model = info["model"]
    assert model["name"] == "serve/model" and re.fullmatch(r"[0-9a-f]{64}", model["sha256"])
    assert model["version"] == info["versions"]["kold-span"]
    assert str(model_dir) not in client.get("/info").text and "/tmp" not in client.get("/info").text  # no disk paths
    assert client.get("/livez").headers["x-model"] == f"serve/model; sha256={model['sha256']}; " \
                                                     f"kold-span={model['version']}"
    answer = client.post("/v1/predict", json={"comments": COMMENTS[:2]})
    assert float(answer.headers["x-inference-time"]) > 0 and float(answer.headers["x-queue-time"]) >= 0
    for route in ("/health", "/info", "/nowhere"):
        assert {"x-queue-time", "x-inference-time"} <= set(client.get(route).headers)
    client.post("/v1/predict", json={"comments": []})
    metrics = client.get("/metrics").text
    assert re.search(r'kold_span_requests_total\{route="/v1/predict",status="200"\} [1-9]', metrics)
    assert re.search(r'kold_span_requests_total\{route="/v1/predict",status="422"\} [1-9]', metrics)
    assert re.search(r'kold_span_requests_total\{route="other",status="404"\} [1-9]', metrics)
    assert re.search(r"kold_span_batch_comments_count [1-9]", metrics)
    assert re.search(r"kold_span_request_seconds_bucket\{le=\"\+Inf\",route=\"/v1/predict\"\} [1-9]", metrics)
    assert "kold_span_queue_comments 0.0" in metrics
    assert re.search(r'kold_span_rejections_total\{reason="invalid"\} [1-9]', metrics)


def test_limits_are_413_naming_the_limit(model_dir):
    client = serving(lambda: load_predictor([model_dir]), limits=Limits(max_bytes=2000, max_comments=2, max_chars=40))
    try:
        def refusal(response):
            assert response.status_code == 413, response.text
            return response.json()["error"]

        big = refusal(client.post("/v1/predict", json={"comments": [{"text": "가" * 30}] * 40}))
        assert "over the limit of 2000 (--max-bytes)" in big["message"]
        chunks = (b'{"comments": [' + b'{"text": "a"},' * 200 + b'{"text": "b"}]}' for _ in range(1))
        streamed = refusal(client.post("/v1/predict", content=chunks))  # no Content-Length: counted as it comes
        assert "--max-bytes" in streamed["message"]
        many = refusal(client.post("/v1/predict", json={"comments": [{"text": "a"}] * 3}))
        assert (many["field"], many["message"]) == ("comments", "comments: 3 comments, over the limit of 2 "
                                                                "(--max-comments)")
        long = refusal(client.post("/v1/predict", json={"comments": [{"text": "a"}, {"text": "가" * 41}]}))
        assert long["field"] == "comments[1].text" and "41 characters, over the limit of 40 (--max-chars)" in \
            long["message"]
        analyze = refusal(client.post("/v1alpha1/comments:analyze",
                                      json={"comment": {"text": "가" * 41}, "requestedAttributes": {"OFF": {}}}))
        assert analyze["field"] == "comment.text"
        # 40 characters is many windows of this model (64 tokens): still one answer for the whole comment
        ok = client.post("/v1/predict", json={"comments": [{"text": "오늘 경기 정말 재밌었어요 " * 2 + "미친놈 아니냐 이거"}]})
        assert ok.status_code == 200
    finally:
        client.__exit__(None, None, None)


def test_what_the_service_loaded_is_out_of_the_garbage_collectors_sight(model_dir):
    # a full collection walked the model, Kiwi and the word lists every 1-2 s under load (~200 ms, every
    # thread stopped); frozen after the warm-up, it walks only what requests made
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    client = serving(lambda: load_predictor([model_dir]), models=(str(model_dir),))
    try:
        assert gc.get_freeze_count() > 10_000
        assert client.post("/v1/predict", json={"comments": [{"text": "오늘 경기 재밌었어요"}]}).status_code == 200
    finally:
        client.__exit__(None, None, None)
        gc.unfreeze()


def test_two_threads_measuring_at_once_measure_what_one_thread_does(model_dir):
    # the batcher's quick thread measures small requests while the other measures a large one: the tokenizer,
    # Kiwi (behind its lock) and the caches are shared
    import threading

    from kold_span.data.example import Example
    from kold_span.service.model import Item, ServedModel
    from kold_span.text.morphemes import clear_cache

    served = ServedModel(load_predictor([model_dir]))
    examples = [Example(id=f"{i}-{k}", text=f"{c['text']} {k}번째 {'ㅋ' * k}", context=c.get("title"))
                for k in range(12) for i, c in enumerate(COMMENTS)]

    def measured(chosen):
        items = [Item(e) for e in chosen]
        return [(shape, [w["input_ids"] for w in item.encoded.windows], item.encoded.text)
                for shape, item in zip(served.shapes(items), items)]

    clear_cache()
    alone = measured(examples)
    clear_cache()
    found, errors = {}, []

    def half(name, chosen):
        try:
            found[name] = [m for e in chosen for m in measured([e])]
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=half, args=(n, examples[n::2])) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert found[0] == alone[0::2] and found[1] == alone[1::2]


def windows_held(root) -> int:
    """How many token windows (a window is a dict with input_ids and text_mask) `root` still reaches, by walking its
    references (not into modules, classes or functions: a window held is held by an object)."""
    seen, todo, found = set(), [root], 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType, str, bytes)):
            continue
        seen.add(id(obj))
        found += isinstance(obj, dict) and "input_ids" in obj and "text_mask" in obj
        todo += gc.get_referents(obj)
    return found


def test_refused_and_failed_requests_leave_no_windows_behind(model_dir):
    """Comments measured and then refused (413), and comments whose batch fails, keep no window in the service."""
    predictor = load_predictor([model_dir])
    client = serving(lambda: predictor, max_request_tokens=640, max_comment_tokens=320)
    service = client.app.state.service
    try:
        long = "오늘 경기 정말 재밌었어요 " * 40
        assert client.post("/v1/predict", json={"comments": [{"text": long}]}).status_code == 413
        many = [{"text": "오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다"}] * 40
        assert client.post("/v1/predict", json={"comments": many}).status_code == 413
        predictor.run_network = lambda prepared: 1 / 0  # every batch fails from now on
        with pytest.raises(ZeroDivisionError):  # a 500 to the client; the test client raises the server's error
            client.post("/v1/predict", json={"comments": [{"text": "꺼져라 진짜"}]})
        assert windows_held(service) == 0
    finally:
        client.__exit__(None, None, None)


def test_an_uploaded_file_gives_predicts_jsonl_and_predicts_errors(client, model_dir, tmp_path, capsys):
    source = tmp_path / "comments.csv"
    source.write_text("guid,title,comment\ng1,예능 출연자 막말 논란,미친놈 아니냐 이거 방송에서 저런 말을 하네\n"
                      "g2,프로야구 개막전 매진,오늘 경기 진짜 재밌었어요\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", str(model_dir), "--input", str(source), "--output", str(out), "--quiet"]) == 0
    response = client.post("/v1/predict/file?filename=comments.csv", content=source.read_bytes())
    assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
    assert response.text == out.read_text(encoding="utf-8")  # the same bytes predict writes
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"comment": "좋은 기사"}\n{"title": "no comment"}\n', encoding="utf-8")
    assert main(["predict", "--model", str(model_dir), "--input", str(bad), "--output", str(out), "--quiet"]) == 2
    # predict's first line, less its hint about --skip-bad (an upload cannot skip) and its note on the output file
    cli_message = capsys.readouterr().err.strip().splitlines()[0].removeprefix("kold-span predict: error: ")
    cli_message = cli_message.split(" (--skip-bad", 1)[0]
    refused = client.post("/v1/predict/file?filename=bad.jsonl", content=bad.read_bytes())
    assert refused.status_code == 422
    assert refused.json()["error"]["message"] == cli_message.replace(str(bad), "bad.jsonl")
    assert refused.json()["error"]["message"].startswith("bad.jsonl:2: no text column")
    missing = client.post("/v1/predict/file", content=b"a\n")
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "filename"


class GatedPredictor:
    """A model stand-in that answers only while its gate is open, so requests pile up in the queue; a comment is
    one window of 8 tokens."""

    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true"))]
    settings = PredictorSettings(snap="none")

    def __init__(self):
        self.gate = threading.Event()
        self.gate.set()
        self.running = threading.Event()
        self.members = [self]

    def contexts_for(self, contexts, perspective):
        return list(contexts)

    def encode(self, texts, contexts):
        return list(texts)

    def window_shape(self, encoded):
        return 1, 8

    def run_encoded(self, encoded, batch_size):
        self.running.set()
        assert self.gate.wait(60)
        return [None for _ in encoded]

    def labels_and_spans(self, text, merged):
        return {"labels": {"OFF": {"label": False, "probs": {"false": 1.0, "true": 0.0}}}, "spans": []}


def test_a_full_queue_is_429_with_retry_after_and_health_stays_200():
    fake = GatedPredictor()
    client = serving(lambda: fake, max_queue=3, max_wait_ms=0, limits=Limits(max_comments=3))
    service = client.app.state.service
    try:
        fake.gate.clear()
        fake.running.clear()
        answers = {}

        def send(name, n):
            answers[name] = client.post("/v1/predict", json={"comments": [{"text": f"댓글 {i}"} for i in range(n)]})

        first = threading.Thread(target=send, args=("first", 1))
        first.start()
        assert fake.running.wait(30)  # the model holds the first comment
        senders = [first]
        for name, n, queued in (("second", 2, 2), ("third", 1, 3)):
            senders.append(threading.Thread(target=send, args=(name, n)))
            senders[-1].start()
            deadline = time.monotonic() + 30
            while service.batcher.queued < queued:
                assert time.monotonic() < deadline, f"{name} was never queued"
                time.sleep(0.01)
            if name == "second":  # 2 waiting + 2 more > 3: refused before any is queued
                too_many = client.post("/v1/predict", json={"comments": [{"text": "a"}, {"text": "b"}]})
                assert too_many.status_code == 429 and int(too_many.headers["retry-after"]) >= 1
                assert "--max-queue" in too_many.json()["error"]["message"]
                assert too_many.json()["error"]["details"] == [{"errorType": "QUEUE_FULL"}]
        full = client.post("/v1/predict", json={"comments": [{"text": "d"}]})  # refused before reading the body
        assert full.status_code == 429 and full.headers["retry-after"].isdigit()
        assert full.json()["error"]["details"] == [{"errorType": "QUEUE_FULL"}]  # the page says "busy" from it
        assert client.get("/health").status_code == 200  # the event loop is free while the model works
        fake.gate.set()
        for sender in senders:
            sender.join(30)
        assert [answers[name].status_code for name in ("first", "second", "third")] == [200, 200, 200]
        assert len(answers["second"].json()["predictions"]) == 2
        assert re.search(r'kold_span_rejections_total\{reason="queue_full"\} [2-9]', client.get("/metrics").text)
    finally:
        fake.gate.set()
        client.__exit__(None, None, None)


def test_health_is_503_until_the_model_has_answered_a_warm_up_batch():
    fake = GatedPredictor()
    release = threading.Event()

    def slow_load():
        assert release.wait(60)
        return fake

    with TestClient(create_app(Settings(), slow_load)) as client:
        loading = client.get("/health")
        assert (loading.status_code, loading.json()) == (503, {"status": "loading"})
        early = client.post("/v1/predict", json={"comments": [{"text": "a"}]})
        assert early.status_code == 503 and early.headers["retry-after"] == "1"
        release.set()
        wait_ready(client, 60)


# Strings, some holding a lone surrogate (json.dumps writes it as the escape "\ud800" a client can send), in every
# place a string goes: values, field names, ids, tokens, attribute names.
LONE = st.builds(lambda a, lone, b: a + lone + b, st.text(max_size=4), st.sampled_from(["\ud800", "\udbff", "\udc00"]),
                 st.text(max_size=4))
STRING = st.text(max_size=20) | LONE
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | STRING,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["comments", "text", "title", "context", "id", "perspective", "comment", "entries",
                         "requestedAttributes", "TOXICITY", "OFF", "scoreThreshold", "scoreType", "languages",
                         "spanAnnotations", "clientToken", "type"]) | st.text(max_size=6) | LONE, inner, max_size=5),
    max_leaves=15)
TEXT = st.text(min_size=1, max_size=60)  # any Unicode but lone surrogates (those come as JSON escapes below)
CLEAN = st.fixed_dictionaries({"comments": st.lists(st.fixed_dictionaries(
    {"text": TEXT}, optional={"title": TEXT | LONE, "id": st.text(max_size=12) | st.integers() | LONE}), min_size=1,
    max_size=4)})
MESSY = st.fixed_dictionaries({"comments": st.lists(st.fixed_dictionaries(
    {"text": TEXT | JSON}, optional={"title": JSON, "context": st.lists(st.text(max_size=20), max_size=6) | JSON,
                                     "id": JSON}), min_size=0, max_size=5)}, optional={"perspective": JSON})
ANALYZE = st.fixed_dictionaries(
    {"comment": st.fixed_dictionaries({"text": TEXT}),
     "requestedAttributes": st.dictionaries(
         st.sampled_from(["TOXICITY", "OFF", "INSULT"]) | LONE,
         st.fixed_dictionaries({}, optional={"scoreThreshold": st.floats(0, 1) | JSON}), min_size=1, max_size=2)},
    optional={"context": st.fixed_dictionaries({"entries": st.lists(st.fixed_dictionaries({"text": TEXT | JSON}))}),
              "spanAnnotations": st.booleans() | JSON, "languages": st.just(["ko"]) | st.lists(LONE, max_size=2) | JSON,
              "clientToken": st.text() | LONE | JSON, "sessionId": LONE})


def dumped(strategy):
    return strategy.map(lambda value: json.dumps(value).encode())


FILE = "/v1/predict/file?filename="
CASES = st.one_of(
    st.tuples(st.just("/v1/predict"), dumped(CLEAN)),
    st.tuples(st.just("/v1/predict"), dumped(MESSY | JSON)),
    st.tuples(st.just("/v1alpha1/comments:analyze"), dumped(ANALYZE)),
    st.tuples(st.just("/v1alpha1/comments:analyze"), dumped(JSON)),
    st.tuples(st.just(FILE + "f.txt"), st.lists(TEXT, min_size=1, max_size=6).map(lambda xs: "\n".join(xs).encode())),
    st.tuples(st.just(FILE + "f.jsonl"), st.lists(dumped(st.fixed_dictionaries({"text": TEXT | JSON}) | JSON),
                                                  min_size=1, max_size=5).map(b"\n".join)),
    st.tuples(st.sampled_from([FILE + "f.csv", FILE + "f.tsv&quoting=none", FILE + "f.csv&text_column=x"]),
              st.lists(TEXT, min_size=1, max_size=5).map(lambda xs: ("comment\n" + "\n".join(xs)).encode())),
    st.tuples(st.sampled_from(["/v1/predict", "/v1alpha1/comments:analyze", FILE + "f.jsonl", FILE + "f.xml",
                               FILE + "../", FILE + "f.csv&quoting=odd"]), st.binary(max_size=300)),
)


FUZZ_COMMENT_TOKENS, FUZZ_REQUEST_TOKENS = 64, 160  # one window of the tiny model; and 2.5 of them


@pytest.fixture(scope="module")
def fuzz_client(model_dir):
    # small limits, so that the fuzzed bodies reach each class: bytes, comments, characters of one and of all,
    # context turns, id length, tokens of one comment and of a request
    client = serving(lambda: load_predictor([model_dir]), limits=Limits(
        max_bytes=4000, max_comments=4, max_chars=80, max_request_chars=200, max_context_turns=3, max_id_chars=8),
        max_request_tokens=FUZZ_REQUEST_TOKENS, max_comment_tokens=FUZZ_COMMENT_TOKENS)
    yield client
    client.__exit__(None, None, None)


@pytest.mark.parametrize("route, body, option", [
    ("/v1/predict", {"comments": [{"text": "가" * 30}] * 40}, "--max-bytes"),
    ("/v1/predict", {"comments": [{"text": "a"}] * 5}, "--max-comments"),
    ("/v1/predict", {"comments": [{"text": "a" * 81}]}, "--max-chars"),
    ("/v1/predict", {"comments": [{"text": "a" * 70}] * 3}, "--max-request-chars"),
    ("/v1/predict", {"comments": [{"text": "a", "context": ["x"] * 4}]}, "--max-context-turns"),
    ("/v1/predict", {"comments": [{"text": "a", "id": "i" * 9}]}, "--max-id-chars"),
    ("/v1/predict", {"comments": [{"text": "가" * 80}]}, "--max-comment-tokens"),  # 82 tokens: 2 windows
    ("/v1/predict", {"comments": [{"text": "가" * 60}] * 3}, "--max-request-tokens"),  # 3 × 62
    ("/v1alpha1/comments:analyze", {"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}},
                                    "context": {"entries": [{"text": "x"}] * 4}}, "--max-context-turns"),
    ("/v1alpha1/comments:analyze", {"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}},
                                    "clientToken": "t" * 9}, "--max-id-chars"),
    (FILE + "f.txt", "\n".join(["가" * 60] * 3), "--max-request-tokens"),
])
def test_every_limit_class_of_the_fuzz_is_within_its_reach(fuzz_client, route, body, option):
    """Each limit the fuzz below runs under, reached by one body of the sizes it generates: its 413s are real."""
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    answer = fuzz_client.post(route, content=content)
    assert answer.status_code == 413 and f"({option})" in answer.json()["error"]["message"], answer.text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=CASES)
@example(case=("/v1/predict", b'{"comments": [{"text": "a\\ud800"}]}'))
@example(case=("/v1/predict", b'{"comments": [{"text": "\\u0000\\u200b\\ufeff"}]}'))
@example(case=("/v1/predict", b'{"comments": [{"text": "x", "id": 1e400}]}'))
@example(case=("/v1/predict", b"[" * 50_000))
@example(case=(FILE + "f.jsonl", b"[" * 50_000 + b"\n"))
@example(case=(FILE + "f.jsonl", b'{"text": "\\udc00"}\n'))
@example(case=(FILE + "f.csv", b'comment\n"a\x00b"\n'))
@example(case=("/v1alpha1/comments:analyze", b'{"comment": {"text": "a"}, "requestedAttributes": {"OFF": null}}'))
def test_no_body_is_a_server_error(fuzz_client, case):
    route, body = case
    response = fuzz_client.post(route, content=body)
    assert response.status_code in (200, 400, 413, 422) or (response.status_code, route) == (415, FILE + "f.xml"), \
        (response.status_code, response.text)
    if response.status_code != 200:
        error = response.json()["error"]
        assert {"code", "status", "message", "field", "requestId"} <= set(error) <= {
            "code", "status", "message", "field", "requestId", "details"}
        assert error["requestId"] == response.headers["x-request-id"]
        if route.startswith("/v1alpha1"):
            assert response.status_code in (400, 413)  # Perspective's INVALID_ARGUMENT, never 422
    elif route.startswith(FILE):
        assert all(json.loads(line)["labels"] for line in response.text.split("\n") if line)  # not splitlines: U+0085
    else:
        assert response.json()


def test_sigterm_finishes_the_requests_in_flight_and_exits_0(model_dir, tmp_path):
    comments = [{"text": f"{c['text']} {i}"} for i in range(120) for c in COMMENTS[:4]]
    with running_server([model_dir], "--max-batch-tokens", "64", "--max-wait-ms", "0", log_dir=tmp_path) as server:
        answers = []
        sender = threading.Thread(target=lambda: answers.append(post(server.url + "v1/predict",
                                                                     {"comments": comments})))
        sender.start()
        deadline = time.monotonic() + 60
        while not re.search(r"kold_span_queue_comments [1-9]", get(server.url + "metrics")[1].decode()):
            assert sender.is_alive() and time.monotonic() < deadline, f"the request was never seen queued: {answers}"
            time.sleep(0.02)
        server.process.send_signal(signal.SIGTERM)
        # --drain-delay (2 s): still listening, /readyz says draining so a load balancer stops sending
        status, body = get(server.url + "readyz")
        assert (status, json.loads(body)) == (503, {"status": "draining"})
        assert get(server.url + "livez")[0] == 200
        sender.join(120)
        assert server.process.wait(120) == 0, server.output()
    [(status, body)] = answers
    assert status == 200 and len(body["predictions"]) == len(comments)
    assert "kold-span serve: stopped" in server.output()


def test_a_model_that_cannot_load_exits_2_naming_it(tmp_path):
    with running_server([tmp_path / "nowhere"], log_dir=tmp_path, ready=False) as server:
        assert server.process.wait(300) == 2
    assert "model directory" in server.output() and "nowhere does not exist" in server.output()


def test_bad_options_and_a_port_in_use_are_errors(model_dir, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--model", str(model_dir), "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    assert main(["serve", "--model", str(model_dir), "--max-comments", "50", "--max-queue", "10"]) == 2
    assert "--max-comments 50 is more than --max-queue 10" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--model", str(model_dir), "--max-wait-ms", "-1"])
    assert "--max-wait-ms: must be at least 0" in capsys.readouterr().err


def test_predict_of_the_fixture_is_stable_under_other_batchings(model_dir, client):
    # the service batches by tokens, predict by count: labels and spans agree, probabilities to 1e-4
    predictor = Predictor.from_pretrained(model_dir)
    comments = [{"text": c["text"]} for c in COMMENTS]
    alone = [client.post("/v1/predict", json={"comments": [c]}).json()["predictions"][0] for c in comments]
    expected = predictor.predict([c["text"] for c in comments], batch_size=2)
    for got, want in zip(alone, expected, strict=True):
        assert [(s["start"], s["end"]) for s in got["spans"]] == [(s["start"], s["end"]) for s in want["spans"]]
        assert got["labels"]["OFF"]["label"] == want["labels"]["OFF"]["label"]
        assert abs(got["labels"]["OFF"]["probs"]["true"] - want["labels"]["OFF"]["probs"]["true"]) < 1e-4


BATCH_TOLERANCE = 5e-4  # docs/SERVICE.md#batch-invariance: the worst measured on this fixture was 1.6e-4


def test_a_comments_answer_does_not_depend_on_the_batch_it_shares(client):
    # float32 sums in another order when a comment shares a padded batch: labels and span offsets are
    # the same alone and in a batch of 8, probabilities and span scores within BATCH_TOLERANCE
    from kold_span import corpora
    from service_model import FIXTURE

    comments = [{"text": e.text, "title": e.context} if isinstance(e.context, str) else {"text": e.text}
                for e in corpora.read("kold", FIXTURE)]
    alone = [client.post("/v1/predict", json={"comments": [c]}).json()["predictions"][0] for c in comments]
    before = client.get("/metrics").text
    grouped = [p for i in range(0, len(comments), 8)
               for p in client.post("/v1/predict", json={"comments": comments[i:i + 8]}).json()["predictions"]]
    batches = re.search(r"kold_span_batch_comments_count (\S+)", client.get("/metrics").text).group(1)
    assert float(batches) - float(re.search(r"kold_span_batch_comments_count (\S+)", before).group(1)) == \
        -(-len(comments) // 8)  # each request of 8 ran as one batch
    worst = 0.0
    for a, b in zip(alone, grouped, strict=True):
        assert {t: x["label"] for t, x in a["labels"].items()} == {t: x["label"] for t, x in b["labels"].items()}
        assert [(s["type"], s["start"], s["end"]) for s in a["spans"]] == \
            [(s["type"], s["start"], s["end"]) for s in b["spans"]]
        worst = max([worst, *(abs(p - b["labels"][t]["probs"][k]) for t, x in a["labels"].items()
                              for k, p in x["probs"].items()),
                     *(abs(s["score"] - z["score"]) for s, z in zip(a["spans"], b["spans"]))])
    assert worst <= BATCH_TOLERANCE, worst


def test_a_sliced_comment_gets_the_answer_it_gets_unsliced(client, model_dir):
    # 128 tokens a pass: the long comment (7 windows of this model) runs in slices of 2 windows
    from kold_span.service.batching import Batcher
    from kold_span.service.model import Item, ServedModel
    from kold_span.data.example import Example

    served = ServedModel(load_predictor([model_dir]), max_batch_tokens=128)
    examples = [Example(id=str(i), text=c["text"], context=c.get("title") or c.get("context"))
                for i, c in enumerate(COMMENTS)]
    [long_item] = [Item(e) for e in examples if e.id == "4"]
    served.shapes([long_item])
    assert served.predictor.window_shape(long_item.encoded)[0] > 2

    def answers(slices, interleave):
        stats = []
        b = Batcher(served.run, served.shapes, 128, 0.0, 100, stats.append, size=served.size, slices=slices)
        b.start()
        futures = b.submit([Item(e) for e in examples], client="long")
        if interleave:  # other clients' one-comment requests while the long comment is sliced
            futures += [f for e in examples[:3] for f in b.submit([Item(e)], client=f"short{e.id}")]
        records = [f.result(60).value for f in futures]
        assert b.close(60)
        return records[:len(examples)], stats

    unsliced, whole = answers(None, False)
    sliced, passes = answers(served.slices, True)
    assert json.dumps(sliced, ensure_ascii=False) == json.dumps(unsliced, ensure_ascii=False)
    assert any(s.comments == 0 for s in passes) and not any(s.comments == 0 for s in whole)  # it was sliced
    # and, over HTTP, the default budget (the comment in one pass) gives the same JSON
    def without_id(records):
        return [{k: v for k, v in r.items() if k != "id"} for r in records]

    assert without_id(client.post("/v1/predict", json={"comments": COMMENTS}).json()["predictions"]) == \
        without_id(sliced)


def test_the_service_slices_a_comment_over_its_batch_budget(model_dir):
    sliced = serving(lambda: load_predictor([model_dir]), models=(str(model_dir),), max_batch_tokens=128)
    try:
        count = r"kold_span_batch_seconds_count (\S+)"
        before = float(re.search(count, sliced.get("/metrics").text).group(1))
        response = sliced.post("/v1/predict", json={"comments": [COMMENTS[-1]]})
        assert response.status_code == 200
        after = float(re.search(count, sliced.get("/metrics").text).group(1))
        # 7 windows of 64 tokens, 2 a pass: 4 forward passes, not 1 (merging and decoding, a turn of its own after
        # them, is no pass)
        assert after - before == 4
    finally:
        sliced.__exit__(None, None, None)


@pytest.mark.parametrize("members", [1, 2])
def test_a_sliced_comment_agrees_with_predict(model_dir, members):
    # a single model and an ensemble (its members' passes in turn, averaged at the end)
    from kold_span.data.example import Example
    from kold_span.service.model import Item, ServedModel

    predictor = load_predictor([model_dir] * members)
    served = ServedModel(predictor, max_batch_tokens=128)
    item = Item(Example(id="long", text=COMMENTS[-1]["text"]))
    served.shapes([item])
    passes = served.slices(item, 128)
    tokens = []
    while True:
        try:
            tokens.append(next(passes))
        except StopIteration as stop:
            got = stop.value
            break
    # its passes, then a turn of no pass that merges and decodes
    assert len(tokens) == 4 * members + 1 and max(tokens) <= 128 and tokens[-1] == 0 and min(tokens[:-1]) > 0
    [want] = predictor.predict([item.example.text])
    assert got["labels"]["OFF"]["label"] == want["labels"]["OFF"]["label"]
    assert [(s["start"], s["end"]) for s in got["spans"]] == [(s["start"], s["end"]) for s in want["spans"]]
    assert abs(got["labels"]["OFF"]["probs"]["true"] - want["labels"]["OFF"]["probs"]["true"]) <= BATCH_TOLERANCE

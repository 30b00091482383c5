"""`kold-span serve` as HTTP clients and operators expect it: probes, HEAD, Allow, CORS, Host, request ids,
API keys, limits before the routes, connection guards, client disconnects, Perspective's errors.

A model stand-in (`tests/test_service.py`'s GatedPredictor) answers here, so these run in seconds;
the real model's answers are tested in tests/test_service.py.
"""
import hashlib
import json
import logging
import re
import socket
import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kold_span.inference.predictor import PredictorSettings
from kold_span.models.tasks import Task
from kold_span.service import server
from kold_span.service.app import ROUTES, Settings, create_app
from kold_span.service.keys import load_keys
from kold_span.service.server import ConnectionLimits
from test_service import GatedPredictor, wait_ready


class Fake(GatedPredictor):
    """The gated stand-in with a span task and what /info reads of a model."""

    tasks = [*GatedPredictor.tasks, Task("OFF_span", "span", "OFF", gate="OFF")]

    def __init__(self):
        super().__init__()
        self.model = SimpleNamespace(encoder=SimpleNamespace(config=SimpleNamespace(model_type="fake")))
        self.settings = PredictorSettings(max_length=64, stride=16, snap="none")
        self.precision = "fp32"  # what /info reports of the network (and, in `settings`, of the inputs)


@contextmanager
def serving(fake=None, **settings):
    fake = fake or Fake()
    with TestClient(create_app(Settings(**settings), lambda: fake)) as client:
        wait_ready(client, 60)
        yield client


GET_ROUTES = [r for r in ROUTES if not r.startswith("/v1")]


def test_every_get_route_answers_head_and_a_405_names_the_allowed_methods():
    with serving() as client:
        for route in GET_ROUTES:
            got, head = client.get(route), client.head(route)
            assert got.status_code == head.status_code == 200, route
            assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]
        wrong = client.post("/info")
        assert wrong.status_code == 405 and set(wrong.headers["allow"].split(", ")) == {"GET", "HEAD"}
        assert wrong.json()["error"]["status"] == "METHOD_NOT_ALLOWED"
        assert client.get("/v1/predict").headers["allow"] == "POST"


def test_livez_is_always_200_and_readyz_says_loading_ok_and_draining():
    fake, release = Fake(), threading.Event()

    def slow():
        assert release.wait(60)
        return fake

    with TestClient(create_app(Settings(), slow)) as client:
        assert client.get("/livez").status_code == 200
        assert (client.get("/readyz").status_code, client.get("/readyz").json()) == (503, {"status": "loading"})
        release.set()
        wait_ready(client, 60)
        assert client.get("/readyz").json() == {"status": "ok"}
        client.app.state.service.draining = True  # what SIGTERM does first (tests/test_service.py sends one)
        draining = client.get("/readyz")
        assert (draining.status_code, draining.json()) == (503, {"status": "draining"})
        assert client.get("/livez").status_code == 200
        # draining refuses nothing: a request the load balancer still sends is answered
        assert client.post("/v1/predict", json={"comments": [{"text": "a"}]}).status_code == 200


def test_cors_is_off_by_default_and_names_only_the_given_origins():
    preflight = {"Origin": "https://mod.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    with serving() as client:
        assert "access-control-allow-origin" not in client.post(
            "/v1/predict", json={"comments": [{"text": "a"}]}, headers={"Origin": "https://mod.example"}).headers
    with serving(cors_origins=("https://mod.example",)) as client:
        ok = client.options("/v1/predict", headers=preflight)
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://mod.example"
        other = client.options("/v1/predict", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        answer = client.post("/v1/predict", json={"comments": [{"text": "a"}]}, headers={"Origin": "https://mod.example"})
        assert "x-request-id" in answer.headers["access-control-expose-headers"]


def test_a_host_off_the_allow_list_is_a_400():
    with serving(allowed_hosts=("testserver", "api.example.com", "*.mod.example")) as client:
        refused = client.get("/info", headers={"Host": "evil.com"})
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "Host"
        assert client.get("/info", headers={"Host": "api.example.com:8080"}).status_code == 200
        assert client.get("/info", headers={"Host": "eu.mod.example"}).status_code == 200


def test_the_request_id_is_taken_or_made_and_is_in_the_answer_the_error_and_the_logs(caplog):
    with serving(access_log="json") as client, caplog.at_level(logging.INFO):
        mine = client.post("/v1/predict", json={"comments": [{"text": "a"}]}, headers={"X-Request-ID": "req-42"})
        assert mine.headers["x-request-id"] == "req-42"
        bad = client.post("/v1/predict", json={"comments": []}, headers={"X-Request-ID": "no spaces allowed"})
        made = bad.headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", made) and bad.json()["error"]["requestId"] == made
        client.get("/info?key=secret-in-query")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "kold_span.access"]
    assert [(x["request_id"], x["path"], x["status"]) for x in lines[:2]] == [("req-42", "/v1/predict", 200),
                                                                              (made, "/v1/predict", 422)]
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("kold_span", "uvicorn")))
    assert "/info" in ours and "secret-in-query" not in ours  # the access log shows paths, never queries


def test_too_many_or_too_large_headers_are_431():
    with serving(max_headers=10) as client:
        many = client.get("/info", headers={f"x-h{i}": "1" for i in range(12)})
        assert many.status_code == 431 and "(--max-headers)" in many.json()["error"]["message"]
    with serving(connections=ConnectionLimits(max_header_bytes=2000)) as client:
        big = client.get("/info", headers={"x-big": "a" * 3000})
        assert big.status_code == 431 and "(--max-header-bytes)" in big.json()["error"]["message"]


def test_a_request_over_the_token_budget_is_413_naming_the_limit():
    with serving(max_request_tokens=20) as client:  # the stand-in's comments are 8 tokens each
        refused = client.post("/v1/predict", json={"comments": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})
        assert refused.status_code == 413
        assert refused.json()["error"]["message"] == ("comments: 24 tokens, over the limit of 20 per request "
                                                      "(--max-request-tokens); send fewer or shorter comments "
                                                      "per request")
        assert client.post("/v1/predict", json={"comments": [{"text": "a"}, {"text": "b"}]}).status_code == 200


def test_an_upload_name_with_nul_or_300_characters_is_a_422_not_a_500():
    with serving() as client:
        for name in ("a%00b.csv", "x" * 300 + ".csv"):
            answer = client.post(f"/v1/predict/file?filename={name}", content=b"comment\nok\n")
            assert answer.status_code == 422 and answer.json()["error"]["field"] == "filename"
        assert 'status="500"' not in client.get("/metrics").text


def test_perspective_errors_are_400_with_perspectives_error_types():
    with serving() as client:
        malformed = client.post("/v1alpha1/comments:analyze", json={"comment": {"text": 5},
                                                                    "requestedAttributes": {"OFF": {}}})
        assert malformed.status_code == 400 and malformed.json()["error"]["status"] == "INVALID_ARGUMENT"
        wrong_type = client.post("/v1alpha1/comments:analyze", json={"comment": {"text": "바보"},
                                                                     "requestedAttributes": {"OFF": {}},
                                                                     "languages": "ko"})
        assert wrong_type.status_code == 400 and wrong_type.json()["error"]["field"] == "languages"
        english = client.post("/v1alpha1/comments:analyze", json={"comment": {"text": "you are an idiot"},
                                                                  "requestedAttributes": {"TOXICITY": {}}})
        assert english.status_code == 400
        [detail] = english.json()["error"]["details"]
        assert detail["errorType"] == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"
        korean = client.post("/v1alpha1/comments:analyze", json={"comment": {"text": "바보 같은 소리"},
                                                                 "requestedAttributes": {"TOXICITY": {}}}).json()
        assert korean["languages"] == korean["detectedLanguages"] == ["ko"]


def key_file(tmp_path, **keys):
    path = tmp_path / "keys.txt"
    path.write_text("# name sha256\n" + "".join(f"{name} {hashlib.sha256(key.encode()).hexdigest()}\n"
                                                for name, key in keys.items()), encoding="utf-8")
    return path


def test_api_keys_401_403_rate_quota_and_counters(tmp_path, caplog):
    keys = str(key_file(tmp_path, team_a="alpha-key", team_b="beta-key"))
    body = {"comments": [{"text": "a"}]}
    with serving(api_keys=keys, rate_limit="3/minute", daily_quota=4, access_log="text") as client, \
            caplog.at_level(logging.DEBUG):
        none = client.post("/v1/predict", json=body)
        assert none.status_code == 401 and none.json()["error"]["status"] == "UNAUTHENTICATED"
        assert none.json()["error"]["details"] == [{"errorType": "API_KEY_MISSING"}]
        wrong = client.post("/v1/predict", json=body, headers={"X-API-Key": "guess"})
        assert wrong.status_code == 403 and wrong.json()["error"]["status"] == "PERMISSION_DENIED"
        assert wrong.json()["error"]["details"] == [{"errorType": "API_KEY_INVALID"}]
        assert client.get("/readyz").status_code == 200 and client.get("/info").status_code == 200  # no key needed
        assert client.post("/v1/predict", json=body, headers={"Authorization": "Bearer alpha-key"}).status_code == 200
        three = {"comments": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}
        assert client.post("/v1/predict?key=alpha-key", json=three).status_code == 200  # 4 comments today
        over_quota = client.post("/v1/predict", json=body, headers={"X-API-Key": "alpha-key"})
        assert over_quota.status_code == 429 and int(over_quota.headers["retry-after"]) > 3600
        assert "(--daily-quota)" in over_quota.json()["error"]["message"]
        assert over_quota.json()["error"]["details"] == [{"errorType": "QUOTA_EXCEEDED"}]  # not the queue's 429
        over_rate = client.post("/v1/predict", json=body, headers={"X-API-Key": "alpha-key"})  # the 4th this minute
        assert over_rate.status_code == 429 and 1 <= int(over_rate.headers["retry-after"]) <= 60
        assert "(--rate-limit)" in over_rate.json()["error"]["message"]
        assert over_rate.json()["error"]["details"] == [{"errorType": "RATE_LIMIT_EXCEEDED"}]
        assert client.post("/v1/predict", json=body, headers={"X-API-Key": "beta-key"}).status_code == 200
        metrics = client.get("/metrics").text
    assert 'kold_span_key_comments_total{key="team_a"} 4.0' in metrics
    assert 'kold_span_key_requests_total{key="team_a",status="429"} 2.0' in metrics
    assert 'kold_span_key_requests_total{key="team_b",status="200"} 1.0' in metrics
    assert re.search(r'kold_span_rejections_total\{reason="unauthenticated"\} 1', metrics)
    assert re.search(r'kold_span_rejections_total\{reason="forbidden"\} 1', metrics)
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("kold_span", "uvicorn")))
    assert "team_a" in ours and "alpha-key" not in ours and "beta-key" not in ours  # names logged, never keys


def test_info_shows_no_path_of_the_servers_disk(tmp_path):
    """Every string in /info, walked: no absolute path, nothing of the model's, keys' or feedback's folders."""
    fake = Fake()
    fake.identity = "ab" * 32
    attributes = tmp_path / "secret-attrs" / "attributes.yaml"
    attributes.parent.mkdir()
    attributes.write_text("attributes:\n  TOXICITY: {task: OFF, spans: OFF_span}\n", encoding="utf-8")
    with serving(fake, models=("/srv/secret-disk/run3/model",), attributes_file=str(attributes),
                 api_keys=str(key_file(tmp_path, team="k")), rate_limit="5/second", daily_quota=100,
                 feedback_file=str(tmp_path / "secret-feedback.jsonl")) as client:
        info = client.get("/info").json()

    def strings(value):
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in [k, *strings(v)]]
        return [s for v in value for s in strings(v)] if isinstance(value, list) else [value]

    shown = [s for s in strings(info) if isinstance(s, str)]
    assert info["model"]["name"] == "run3/model" and info["attributes"]["TOXICITY"]["task"] == "OFF"
    assert info["access"]["api_keys"] is True and info["feedback"]["enabled"] is True
    for text in shown:
        assert not text.startswith(("/", "~")) and "secret" not in text and str(tmp_path) not in text, text


class Tuned(Fake):
    """A stand-in whose tasks decide every way a model can: top label, thresholds tuned or not, spans both ways."""

    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")),
             Task("TGT", "sequence", "TGT", problem="multi", labels=("group", "individual"), thresholds=(0.35, 0.6)),
             Task("GRP", "sequence", "GRP", problem="multi", labels=("men", "women")),
             Task("OFF_span", "span", "OFF", gate="OFF", thresholds=(0.4,)),
             Task("TGT_span", "span", "TGT")]


def test_info_says_how_each_task_decides_from_the_thresholds_the_model_decodes_with():
    with serving(Tuned()) as client:
        tasks = {t["name"]: t["decision"] for t in client.get("/info").json()["tasks"]}
    assert tasks == {
        "OFF": {"rule": "most probable label"},  # argmax: true when P(true) > 0.5, whatever thresholds say
        "TGT": {"rule": "threshold", "thresholds": {"group": 0.35, "individual": 0.6}},  # tuned on dev
        "GRP": {"rule": "threshold", "thresholds": {"men": 0.5, "women": 0.5}},  # none recorded: 0.5 each
        "OFF_span": {"rule": "P(B)+P(I) >= t", "threshold": 0.4},
        "TGT_span": {"rule": "most probable tag"},
    }


def test_a_key_file_with_a_plain_key_or_a_bad_line_is_an_error_naming_the_line(tmp_path):
    from kold_span.errors import ConfigError

    path = tmp_path / "keys.txt"
    path.write_text("team_a " + "0" * 64 + "\nteam_b my-plain-key\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"keys.txt:2: team_b: expected the key's SHA-256 as 64 hex digits"):
        load_keys(path)


def test_process_metrics_and_the_docs_are_served_offline():
    with serving() as client:
        metrics = client.get("/metrics").text
        assert "process_resident_memory_bytes" in metrics and "process_open_fds" in metrics
        spec = client.get("/openapi.json").json()
        assert {"/v1/predict", "/v1alpha1/comments:analyze", "/readyz", "/livez"} <= set(spec["paths"])
        docs = client.get("/docs").text
        assert "openapi.json" in docs and not re.search(r"""(src|href)=["']?(https?:)?//""", docs)


# -------------------------------------------------------------------- a real uvicorn on 127.0.0.1


@contextmanager
def live_server(fake, connections=ConnectionLimits(), http="auto", **settings):
    """The app under the guarded uvicorn protocol in a thread, on a free loopback port."""
    app = create_app(Settings(connections=connections, **settings), lambda: fake)
    sock = server.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    made = []
    thread = threading.Thread(target=server.run, args=(app, sock),
                              kwargs={"connections": connections, "log_level": "warning", "created": made.append,
                                      "http": http},
                              daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not (made and made[0].started and app.state.service.ready):
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield port, app.state.service
    finally:
        fake.gate.set()
        made[0].should_exit = True
        thread.join(30)
        sock.close()


def http_request(port, path="/readyz", method="GET", body=b"", timeout=10):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def closed_by_server(conn, within):
    conn.settimeout(within)
    try:
        return conn.recv(1024) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_a_gone_clients_queued_comments_are_dropped_and_counted_499_not_500():
    from kold_span.service.middleware import RequestIdFilter

    seen = []
    handler = logging.Handler(logging.INFO)
    handler.addFilter(RequestIdFilter())
    handler.emit = lambda record: seen.append((record.levelname, record.request_id, record.getMessage()))
    logger = logging.getLogger("kold_span.service")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    fake = Fake()
    with live_server(fake, max_wait_ms=0) as (port, service):
        fake.gate.clear()
        fake.running.clear()
        holder = threading.Thread(target=http_request, args=(port, "/v1/predict", "POST",
                                                             b'{"comments": [{"text": "first"}]}', 60))
        holder.start()
        assert fake.running.wait(10)  # the model holds the first request
        body = json.dumps({"comments": [{"text": f"c{i}"} for i in range(5)]}).encode()
        conn = socket.create_connection(("127.0.0.1", port))
        conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"X-Request-ID: gone-1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        deadline = time.monotonic() + 10
        while service.batcher.queued < 5:
            assert time.monotonic() < deadline, "the request was never queued"
            time.sleep(0.01)
        conn.close()  # the client leaves
        while service.batcher.queued:
            assert time.monotonic() < deadline, "the gone client's comments stayed queued"
            time.sleep(0.01)
        fake.gate.set()
        holder.join(30)
        status, metrics = http_request(port, "/metrics")
    logger.removeHandler(handler)
    text = metrics.decode()
    gone = [(level, rid) for level, rid, message in seen if "client left" in message]
    assert gone and set(gone) == {("INFO", "gone-1")}  # quiet lines, under the request's id
    assert not [m for level, _, m in seen if level in ("ERROR", "CRITICAL")]
    assert "kold_span_cancelled_comments_total 5.0" in text
    assert re.search(r'kold_span_requests_total\{route="/v1/predict",status="499"\} 1', text)
    assert 'status="500"' not in text


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_slow_headers_are_cut_off_and_connections_past_the_cap_are_closed(http):
    fake = Fake()
    limits = ConnectionLimits(max_connections=4, header_timeout=0.5, max_header_bytes=4096, max_client_connections=100)
    with live_server(fake, connections=limits, http=http) as (port, service):
        dribbler = socket.create_connection(("127.0.0.1", port))
        dribbler.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
        assert closed_by_server(dribbler, within=5)
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4 + server.PROBE_RESERVE)]
        time.sleep(0.1)
        extra = socket.create_connection(("127.0.0.1", port))
        assert closed_by_server(extra, within=0.3)  # past the cap and the probes' reserve: closed at once
        for conn in held + [dribbler, extra]:
            conn.close()
        time.sleep(0.6)
        huge = socket.create_connection(("127.0.0.1", port))
        huge.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 5000 + b"\r\n\r\n")
        huge.settimeout(5)
        assert huge.recv(100).startswith(b"HTTP/1.1 431")
        huge.close()
        assert http_request(port)[0] == 200  # and the service still answers


def test_the_model_identity_changes_with_any_byte_and_not_with_the_folder(tmp_path):
    """What X-Model and /info name: `Predictor.identity`, the manifest's digest of the directory."""
    from kold_span.models.manifest import directory_identity

    def model_digest(folders):
        return directory_identity(folders[0])

    one, two = tmp_path / "a" / "model", tmp_path / "b" / "model"
    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / "config.json").write_text('{"x": 1}')
        (folder / "sub" / "weights.safetensors").write_bytes(b"\x00\x01")
    assert model_digest([one]) == model_digest([two])  # where it lies does not count
    (two / "sub" / "weights.safetensors").write_bytes(b"\x00\x02")
    assert model_digest([one]) != model_digest([two])
    (two / "sub" / "weights.safetensors").write_bytes(b"\x00\x01")
    (two / "config.json").rename(two / "config2.json")
    assert model_digest([one]) != model_digest([two])  # a renamed file counts


LONE = st.builds(lambda a, lone, b: a + lone + b, st.text(max_size=2), st.sampled_from(["\ud800", "\udc00"]),
                 st.text(max_size=2))  # a lone surrogate: json.dumps writes the escape a client may send
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.floats(-1, 2) | st.integers(-5, 20) | st.text(max_size=5) |
                           LONE,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["summaryScore", "spanScores", "value", "begin", "end", "score"]),
                               inner, max_size=3), max_leaves=8)
METHODS = st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
PATHS = st.sampled_from(list(ROUTES)) | st.sampled_from(["/v1", "/v1/predict/", "/%00", "/docs/../info"]) | \
    st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=30).map(lambda p: "/" + p).filter(
        lambda p: not p.startswith("//"))  # the client reads `//host:port/...` as an authority, never as a path
HEADER_VALUE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
HEADERS = st.dictionaries(st.sampled_from(["x-request-id", "host", "origin", "x-api-key", "authorization",
                                           "content-type", "x-forwarded-for"]) |
                          st.from_regex(r"x-[a-z]{1,8}", fullmatch=True), HEADER_VALUE, max_size=12)


@pytest.fixture(scope="module")
def fuzz_http(tmp_path_factory):
    keys = str(key_file(tmp_path_factory.mktemp("keys"), team="k"))
    with serving(api_keys=keys, rate_limit="1000/second", daily_quota=10**6, max_headers=8,
                 cors_origins=("https://mod.example",),
                 allowed_hosts=("testserver", "*.example"),
                 feedback_file=str(tmp_path_factory.mktemp("feedback") / "f.jsonl")) as client:
        yield client


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=METHODS, path=PATHS, headers=HEADERS, key=st.sampled_from([None, "k", "wrong"]),
       body=st.binary(max_size=64) | st.just(b'{"comments": [{"text": "a"}]}') | st.builds(
           lambda scores: json.dumps({"comment": {"text": "바보"}, "attributeScores": scores}).encode(),
           st.dictionaries(st.sampled_from(["OFF", "TOXICITY", "NOPE"]), JSON_VALUES, max_size=2)))
def test_no_method_path_or_header_is_a_server_error(fuzz_http, method, path, headers, key, body):
    if key is not None:
        headers = {**headers, "x-api-key": key}
    response = fuzz_http.request(method, path, headers=headers, content=body if method != "GET" else None)
    assert response.status_code < 500, (method, path, response.status_code)
    if response.status_code >= 400 and response.headers.get("content-type") == "application/json" \
            and method != "HEAD":
        assert response.json()["error"]["requestId"] == response.headers["x-request-id"]


def test_a_moderators_suggestion_is_appended_as_training_data_with_the_moderator(tmp_path):
    from kold_span import corpora

    path = tmp_path / "feedback.jsonl"
    suggest = "/v1alpha1/comments:suggestscore"
    body = {"comment": {"text": "너 진짜 바보냐"}, "context": {"entries": [{"text": "기사 제목"}]},
            "attributeScores": {"TOXICITY": {"summaryScore": {"value": 1.0},
                                             "spanScores": [{"begin": 5, "end": 7, "score": {"value": 1}}]}},
            "clientToken": "fix-1"}
    with serving(api_keys=str(key_file(tmp_path, mod_kim="kim-key")), feedback_file=str(path),
                 feedback_max_bytes=1500, feedback_key_share=1.0) as client:
        key = {"X-API-Key": "kim-key"}
        answer = client.post(suggest, json=body, headers=key)
        assert (answer.status_code, answer.json()) == (200, {"clientToken": "fix-1"})
        not_off = {**body, "attributeScores": {"OFF": {"summaryScore": {"value": 0.1}}}, "clientToken": None}
        assert client.post(suggest, json=not_off, headers=key).status_code == 200
        bad_span = {**body, "attributeScores": {"TOXICITY": {"spanScores": [{"begin": 5, "end": 99}]}}}
        refused = client.post(suggest, json=bad_span, headers=key)
        assert refused.status_code == 400 and "the comment's length" in refused.json()["error"]["message"]
        assert client.post(suggest, json=body).status_code == 401
        while (full := client.post(suggest, json=body, headers=key)).status_code == 200:
            assert path.stat().st_size <= 1500
        assert full.status_code == 507 and "--feedback-max-bytes)" in full.json()["error"]["message"]
        assert "retry-after" not in full.headers
        assert full.json()["error"]["details"] == [{"errorType": "FEEDBACK_FULL"}]
    examples = corpora.read("jsonl", path)  # what train reads with data.format: jsonl
    first, second = examples[0], examples[1]
    assert (first.text, first.context, first.labels, first.spans) == ("너 진짜 바보냐", "기사 제목", {"OFF": True},
                                                                      {"OFF": [(5, 7)]})
    assert first.annotations[0].annotator == "mod_kim" and first.annotations[0].spans == {"OFF": [(5, 7)]}
    assert second.labels == {"OFF": False}
    assert all(len(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1])  # whole lines only
    with serving() as client:
        assert client.post(suggest, json=body).status_code == 404  # off without --feedback


SPAN = st.fixed_dictionaries({}, optional={"begin": st.integers(-2, 8) | JSON_VALUES,
                                           "end": st.integers(-2, 8) | JSON_VALUES, "score": JSON_VALUES})
SCORES = st.dictionaries(st.sampled_from(["OFF", "TOXICITY", "NOPE"]) | LONE, st.fixed_dictionaries(
    {}, optional={"summaryScore": st.fixed_dictionaries({"value": st.floats(-1, 2) | JSON_VALUES}) | JSON_VALUES,
                  "spanScores": st.lists(SPAN, max_size=3) | JSON_VALUES}) | JSON_VALUES, max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scores=SCORES, text=st.text(max_size=8) | LONE, token=st.none() | st.text(max_size=4) | LONE | JSON_VALUES)
def test_no_suggestion_is_a_server_error(fuzz_http, scores, text, token):
    body = {"comment": {"text": text}, "attributeScores": scores, "clientToken": token}
    answer = fuzz_http.post("/v1alpha1/comments:suggestscore", content=json.dumps(body).encode(),
                            headers={"x-api-key": "k", "content-type": "application/json"})
    assert answer.status_code in (200, 400, 413), answer.text
    if answer.status_code != 200:
        assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"

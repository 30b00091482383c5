"""`kold-span serve` against hostile clients (issue 56): what a client sends is checked at the edge, refusals
and failures cost nothing, errors are counted as what they are, and pages of other origins cannot post.

The model stand-in of tests/test_service_http.py answers here; a real uvicorn runs on 127.0.0.1 where the
HTTP parser matters.
"""
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_service_http import Fake, key_file, serving

SURROGATE = "\\ud800"  # as a JSON escape: JSON text may hold it, no UTF-8 answer can
PREDICT, ANALYZE, SUGGEST = "/v1/predict", "/v1alpha1/comments:analyze", "/v1alpha1/comments:suggestscore"


class Counting(Fake):
    """The stand-in, counting the comments the model ran."""

    def __init__(self):
        super().__init__()
        self.ran = 0

    def run_encoded(self, encoded, batch_size):
        self.ran += len(encoded)
        return super().run_encoded(encoded, batch_size)


# Each body has one string marked @ where a lone surrogate goes, and the field the 400/422 must name.
ECHOED = [
    (PREDICT, '{"comments": [{"text": "a", "id": "@"}]}', "comments[0].id"),
    (PREDICT, '{"comments": [{"text": "a", "title": "@"}]}', "comments[0].title"),
    (PREDICT, '{"comments": [{"text": "a", "context": ["x", "@"]}]}', "comments[0].context[1]"),
    (PREDICT, '{"comments": [{"text": "a", "@": 1}]}', "comments[0]"),
    (PREDICT, '{"comments": [{"text": "a"}], "perspective": {"age": "@"}}', "perspective.age"),
    (ANALYZE, '{"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "clientToken": "@"}', "clientToken"),
    (ANALYZE, '{"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "sessionId": "@"}', "sessionId"),
    (ANALYZE, '{"comment": {"text": "a"}, "requestedAttributes": {"@": {}}}', "requestedAttributes"),
    (ANALYZE, '{"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "@": 1}', "body"),
    (ANALYZE, '{"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "languages": ["@"]}', "languages[0]"),
    (SUGGEST, '{"comment": {"text": "a"}, "attributeScores": {"OFF": {"summaryScore": {"value": 1}}}, '
              '"clientToken": "@"}', "clientToken"),
    (SUGGEST, '{"comment": {"text": "a"}, "attributeScores": {"@": {"summaryScore": {"value": 1}}}}',
     "attributeScores"),
    (SUGGEST, '{"comment": {"text": "a"}, "context": {"entries": [{"text": "@"}]}, '
              '"attributeScores": {"OFF": {"summaryScore": {"value": 1}}}}', "context.entries[0].text"),
]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    fake = Counting()
    feedback = folder / "feedback.jsonl"
    with serving(fake, api_keys=str(key_file(folder, team="k")), daily_quota=1000,
                 feedback_file=str(feedback)) as client:
        yield client, fake, feedback


def used_quota(client):
    found = re.search(r'kold_span_key_comments_total\{key="team"\} ([0-9.]+)', client.get("/metrics").text)
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize("route, body, field", ECHOED)
def test_a_lone_surrogate_in_any_echoed_field_is_refused_naming_it_before_anything_runs(keyed, route, body, field):
    client, fake, feedback = keyed
    ran, charged = fake.ran, used_quota(client)
    answer = client.post(route, content=body.replace("@", "x" + SURROGATE).encode(), headers={"x-api-key": "k"})
    assert answer.status_code == (400 if route != PREDICT else 422), answer.text
    error = answer.json()["error"]
    assert error["field"] == field and "a lone surrogate" in error["message"]
    assert (fake.ran, used_quota(client)) == (ran, charged)
    assert not feedback.exists() or feedback.read_text(encoding="utf-8") == ""


STRINGS = st.text(st.characters(codec="utf-8", exclude_characters='"\\'), max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(ECHOED), before=STRINGS, after=STRINGS)
def test_no_surrogate_anywhere_in_an_echoed_field_is_a_server_error(keyed, case, before, after):
    route, body, field = case
    client, fake, feedback = keyed
    content = body.replace("@", json.dumps(before)[1:-1] + SURROGATE + json.dumps(after)[1:-1]).encode()
    answer = client.post(route, content=content, headers={"x-api-key": "k"})
    assert answer.status_code in (400, 422) and answer.json()["error"]["field"] == field, answer.text
    assert not feedback.exists() or feedback.read_text(encoding="utf-8") == ""


class Failing(Fake):
    """The stand-in whose batches fail once `failing` is set (after the warm-up)."""

    failing = False

    def run_encoded(self, encoded, batch_size):
        if self.failing:
            raise RuntimeError("the model failed")
        return super().run_encoded(encoded, batch_size)


def test_a_5xx_is_counted_and_logged_as_a_5xx_not_as_a_client_gone(tmp_path, caplog):
    from fastapi.testclient import TestClient

    from kold_span.service.app import Settings, create_app
    from test_service import wait_ready

    fake = Failing()
    with TestClient(create_app(Settings(access_log="text"), lambda: fake), raise_server_exceptions=False) \
            as client, caplog.at_level("INFO"):
        wait_ready(client, 60)
        fake.failing = True
        assert client.post(PREDICT, json={"comments": [{"text": "a"}]}).status_code == 500
        metrics = client.get("/metrics").text
    assert re.search(r'kold_span_requests_total\{route="/v1/predict",status="500"\} 1', metrics)
    assert 'status="499"' not in metrics
    lines = [r.getMessage() for r in caplog.records if r.name == "kold_span.access"]
    assert any(" /v1/predict 500 " in line for line in lines), lines
    assert not any("client left" in r.getMessage() for r in caplog.records)


def test_a_refused_or_failed_request_costs_no_quota(tmp_path):
    from fastapi.testclient import TestClient

    from kold_span.service.app import Settings, create_app
    from kold_span.service.requests import Limits
    from test_service import wait_ready

    fake = Failing()
    keys = str(key_file(tmp_path, team="k"))
    with TestClient(create_app(Settings(api_keys=keys, daily_quota=2, limits=Limits(max_comments=2)), lambda: fake),
                    raise_server_exceptions=False) as client:
        wait_ready(client, 60)
        key = {"x-api-key": "k"}
        assert client.post(PREDICT, json={"comments": [{"text": "a"}] * 3}, headers=key).status_code == 413
        assert client.post(PREDICT, json={"comments": [{"text": ""}]}, headers=key).status_code == 422
        fake.failing = True
        assert client.post(PREDICT, json={"comments": [{"text": "a"}]}, headers=key).status_code == 500
        fake.failing = False
        assert client.post(PREDICT, json={"comments": [{"text": "a"}] * 2}, headers=key).status_code == 200
        spent = client.post(PREDICT, json={"comments": [{"text": "a"}]}, headers=key)
        assert spent.status_code == 429 and spent.json()["error"]["details"] == [{"errorType": "QUOTA_EXCEEDED"}]
        metrics = client.get("/metrics").text
    assert 'kold_span_key_comments_total{key="team"} 2.0' in metrics


def test_one_client_fills_only_its_share_of_the_feedback_file_and_a_full_file_is_507(tmp_path):
    path = tmp_path / "feedback.jsonl"
    body = {"comment": {"text": "너 진짜 바보냐"}, "attributeScores": {"OFF": {"summaryScore": {"value": 1}}}}
    keys = str(key_file(tmp_path, flood="f", kim="k"))
    with serving(api_keys=keys, feedback_file=str(path), feedback_max_bytes=4000, feedback_key_share=0.5,
                 feedback_max_request_bytes=1000) as client:
        for _ in range(40):  # bounded: the share (2000 bytes) is a few lines
            flood = client.post(SUGGEST, json=body, headers={"x-api-key": "f"})
            if flood.status_code != 200:
                break
        assert flood.status_code == 507 and "retry-after" not in flood.headers
        assert flood.json()["error"]["details"] == [{"errorType": "FEEDBACK_FULL"}]
        assert 'kold_span_rejections_total{reason="feedback_full"} 1.0' in client.get("/metrics").text
        assert "flood's share" in flood.json()["error"]["message"]
        assert client.post(SUGGEST, json=body, headers={"x-api-key": "k"}).status_code == 200  # others still can
        big = {**body, "comment": {"text": "바보 " * 300}}
        too_big = client.post(SUGGEST, json=big, headers={"x-api-key": "k"})
        assert too_big.status_code == 413 and "(--feedback-max-request-bytes)" in too_big.json()["error"]["message"]
    with serving(api_keys=keys, feedback_file=str(path), feedback_max_bytes=4000, feedback_key_share=0.5) as client:
        assert client.post(SUGGEST, json=body, headers={"x-api-key": "f"}).status_code == 507  # counted from the file


@pytest.mark.parametrize("scores, languages, field", [
    ({"TOXICITY": {"summaryScore": {"value": 1}}, "OFF": {"summaryScore": {"value": 0}}}, None,
     "attributeScores.OFF.summaryScore"),
    ({"OFF": {}}, None, "attributeScores.OFF"),
    ({"OFF": {"summaryScore": {"value": 1}}}, ["en"], "languages"),
])
def test_conflicting_empty_or_unreadable_corrections_are_400s(tmp_path, scores, languages, field):
    path = tmp_path / "feedback.jsonl"
    body = {"comment": {"text": "너 진짜 바보냐"}, "attributeScores": scores}
    if languages:
        body["languages"] = languages
    with serving(feedback_file=str(path)) as client:
        answer = client.post(SUGGEST, json=body)
        assert answer.status_code == 400 and answer.json()["error"]["field"] == field, answer.text
    assert not path.exists() or path.read_text(encoding="utf-8") == ""


def test_no_redirect_is_built_from_the_host_header():
    with serving(api_keys=None) as client:
        answer = client.post("/v1/predict/?key=K", json={"comments": [{"text": "a"}]}, headers={"Host": "evil"},
                             follow_redirects=False)
        assert answer.status_code == 404 and "location" not in answer.headers
        assert "evil" not in answer.text


def raw_request(port, request: bytes, timeout=10):
    """Status and bytes of the answer to one raw HTTP request on a fresh connection."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_allowed_hosts_checks_an_absolute_form_request_target(http):
    from test_service_http import live_server

    body = b'{"comments": [{"text": "a"}]}'
    with live_server(Fake(), http=http, allowed_hosts=("127.0.0.1",)) as (port, service):
        status, data = raw_request(port, b"POST http://evil.example/v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         b"Content-Type: application/json\r\nConnection: close\r\n"
                                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert status == 400 and b"evil.example" in data and b"--allowed-hosts" in data
        status, _ = raw_request(port, b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status == 200


@pytest.mark.parametrize("trusted, seen", [((), "127.0.0.1"), (("127.0.0.1",), "6.6.6.6")])
def test_x_forwarded_for_is_believed_only_from_trusted_proxies(caplog, trusted, seen):
    from test_service_http import live_server

    with caplog.at_level("INFO", logger="kold_span.access"), \
            live_server(Fake(), access_log="json", trusted_proxies=trusted) as (port, service):
        status, _ = raw_request(port, b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 6.6.6.6\r\n"
                                      b"Connection: close\r\n\r\n")
        assert status == 200
    [line] = [json.loads(r.getMessage()) for r in caplog.records if r.name == "kold_span.access"
              and '"/livez"' in r.getMessage()]
    assert line["client"] == seen


def test_the_pages_forbid_framing_sniffing_and_scripts_from_elsewhere():
    import base64
    import hashlib

    with serving() as client:
        for path in ("/", "/docs"):
            page = client.get(path)
            headers = page.headers
            assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
            assert headers["referrer-policy"] == "no-referrer"
            policy = dict(part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
            assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
            assert policy["connect-src"] == "'self' blob:" and "unsafe-inline" not in headers["content-security-policy"]
            script = re.search(r"<script>(.*?)</script>", page.text, re.S).group(1)
            digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
            assert policy["script-src"] == f"'sha256-{digest}'"  # the page's own script, and only it


@pytest.mark.parametrize("keys", [False, True])
def test_a_page_of_another_origin_cannot_post(tmp_path, keys):
    path = tmp_path / "feedback.jsonl"
    options = {"api_keys": str(key_file(tmp_path, team="k"))} if keys else {}
    body = json.dumps({"comment": {"text": "너 진짜 바보냐"},
                       "attributeScores": {"OFF": {"summaryScore": {"value": 1}}}}).encode()
    with serving(feedback_file=str(path), cors_origins=("https://mod.example",), **options) as client:
        key = {"x-api-key": "k"} if keys else {}
        for origin in ("http://evil.example", "null", "http://testserver.evil.example", "https://testserver:8443"):
            forged = client.post(SUGGEST, content=body, headers={"Content-Type": "text/plain", "Origin": origin, **key})
            assert forged.status_code == 403 and forged.json()["error"]["field"] == "Origin", origin
        assert not path.exists() or path.read_text(encoding="utf-8") == ""
        for origin in (None, "http://testserver", "https://mod.example"):  # no Origin, the same, a --cors-origin
            headers = {"Origin": origin, **key} if origin else key
            assert client.post(SUGGEST, content=body, headers=headers).status_code == 200, origin
        assert client.get("/info", headers={"Origin": "http://evil.example"}).status_code == 200  # reads are not
        assert 'kold_span_rejections_total{reason="cross_origin"} 4.0' in client.get("/metrics").text


class Spanning(Fake):
    """The stand-in marking each comment's last two characters as an OFF span."""

    def labels_and_spans(self, text, merged):
        record = super().labels_and_spans(text, merged)
        return {**record, "spans": [{"type": "OFF", "start": len(text) - 2, "end": len(text), "text": text[-2:],
                                     "score": 0.9}]}


def test_perspectives_span_offsets_are_utf16_units_and_v1s_are_code_points_unless_asked():
    text = "😀 너 바보"  # the emoji is one code point and two UTF-16 units: 바보 is [4, 6) and [5, 7)
    with serving(Spanning()) as client:
        analyzed = client.post(ANALYZE, json={"comment": {"text": text}, "requestedAttributes": {"OFF": {}},
                                              "spanAnnotations": True}).json()
        [span] = analyzed["attributeScores"]["OFF"]["spanScores"]
        assert (span["begin"], span["end"]) == (5, 7)
        [record] = client.post(PREDICT, json={"comments": [{"text": text}]}).json()["predictions"]
        assert [(s["start"], s["end"]) for s in record["spans"]] == [(4, 6)]
        [record] = client.post(PREDICT + "?offsets=utf-16", json={"comments": [{"text": text}]}).json()["predictions"]
        assert [(s["start"], s["end"]) for s in record["spans"]] == [(5, 7)]
        assert client.post(PREDICT + "?offsets=bytes", json={"comments": [{"text": text}]}).status_code == 422


def test_suggested_spans_are_read_as_utf16_units(tmp_path):
    path = tmp_path / "feedback.jsonl"
    text = "😀 너 바보"

    def suggest(client, begin, end):
        return client.post(SUGGEST, json={"comment": {"text": text}, "attributeScores": {"OFF": {
            "summaryScore": {"value": 1}, "spanScores": [{"begin": begin, "end": end, "score": {"value": 1}}]}}})

    with serving(feedback_file=str(path)) as client:
        assert suggest(client, 5, 7).status_code == 200
        inside = suggest(client, 1, 7)  # unit 1 is the second half of the emoji
        assert inside.status_code == 400 and "surrogate pair" in inside.json()["error"]["message"]
        assert suggest(client, 5, 8).status_code == 400  # past the 7 units
    [line] = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["spans"] == {"OFF": [[4, 6]]}


FILE = "/v1/predict/file?filename="


def test_uploads_only_in_the_documented_formats_and_never_multipart():
    with serving() as client:
        parquet = client.post(FILE + "comments.parquet", content=b"PAR1" + b"\x00" * 545 + b"PAR1")
        assert parquet.status_code == 415
        assert all(x in parquet.json()["error"]["message"] for x in (".txt", ".csv", ".tsv", ".jsonl"))
        files = {"file": ("comments.txt", b"comment one\ncomment two\n", "text/plain")}
        for route in (FILE + "comments.txt", PREDICT, ANALYZE):
            multipart = client.post(route, files=files)
            assert multipart.status_code == 415 and "multipart" in multipart.json()["error"]["message"], route


def test_a_100000_column_header_is_read_at_once():
    header = ",".join(f"c{i}" for i in range(100_000)) + ",comment"
    row = "," * 100_000 + "바보"
    with serving() as client:
        answer = client.post(FILE + "wide.csv", content=f"{header}\n{row}\n".encode())
        assert answer.status_code == 200 and json.loads(answer.text)["text"] == "바보"
        missing = client.post(FILE + "wide.csv", content=",".join(f"c{i}" for i in range(100_000)).encode() + b"\n")
        assert missing.status_code == 422 and len(missing.content) < 4096


def test_an_error_listing_many_names_lists_a_bounded_number_and_says_how_many_more():
    names = {f"NAME{i}": {} for i in range(50)}
    with serving() as client:
        answer = client.post(ANALYZE, json={"comment": {"text": "바보"}, "requestedAttributes": names})
        assert answer.status_code == 400 and "and 30 more" in answer.json()["error"]["message"]
        huge_name = client.post(PREDICT, json={"comments": [{"text": "a", "x" * 200_000: 1}]})
        assert huge_name.status_code == 422 and len(huge_name.content) < 4096


@pytest.mark.parametrize("route, body, field", [
    (ANALYZE, {"comment": {"text": "바보"}, "requestedAttributes": {f"A{i}": {} for i in range(200_000)}},
     "requestedAttributes"),
    (SUGGEST, {"comment": {"text": "바보"}, "attributeScores": {"OFF": {"spanScores": [
        {"begin": 0, "end": 1}] * 150_000}}}, "attributeScores.OFF.spanScores"),
])
def test_huge_lists_are_refused_by_their_length_naming_the_field(tmp_path, route, body, field):
    with serving(feedback_file=str(tmp_path / "f.jsonl")) as client:
        answer = client.post(route, json=body)
        assert answer.status_code == 413 and answer.json()["error"]["field"] == field, answer.text[:300]
        assert len(answer.content) < 4096


def test_requests_refused_413_leave_nothing_held(monkeypatch):
    """Comments measured (tokenized, their morphemes analysed) and then refused keep no window, no queue entry,
    and no more of the morpheme cache than its byte bound."""
    from kold_span.inference.ensemble import load_predictor
    from kold_span.text import morphemes
    from service_model import tiny_model
    from test_service import windows_held

    monkeypatch.setattr(morphemes, "CACHE_BYTES", 2_000_000)
    morphemes.clear_cache()
    predictor = load_predictor([tiny_model()])
    syllable = lambda n: chr(0xAC00 + (n * 7919) % 11172)  # noqa: E731 (distinct words, no two alike)
    with serving(predictor, max_request_tokens=640) as client:
        service = client.app.state.service
        for request in range(6):
            comments = [{"text": " ".join(syllable(request * 10**6 + c * 10**4 + w) + syllable(w) for w in range(1500))}
                        for c in range(3)]
            answer = client.post(PREDICT, json={"comments": comments})
            assert answer.status_code == 413 and "(--max-request-tokens)" in answer.json()["error"]["message"]
        assert service.batcher.queued == 0 and service.batcher._groups == []
        assert windows_held(service) == 0
        texts, held = morphemes.cache_held()
        assert held <= 2_000_000 and texts < 6 * 3 * 2
    morphemes.clear_cache()


def test_one_clients_flood_gets_429_while_others_are_still_admitted(tmp_path):
    import threading
    import time

    from kold_span.service.requests import Limits

    fake = Fake()
    keys = str(key_file(tmp_path, flood="f", victim="v"))
    with serving(fake, api_keys=keys, max_queue=8, max_client_queue=4, max_wait_ms=0,
                 limits=Limits(max_comments=4)) as client:
        service = client.app.state.service
        fake.gate.clear()
        fake.running.clear()
        answers = {}

        def send(name, key, n):
            answers[name] = client.post(PREDICT, json={"comments": [{"text": f"{name} {i}"} for i in range(n)]},
                                        headers={"x-api-key": key})

        senders = [threading.Thread(target=send, args=("held", "f", 1))]
        senders[0].start()
        assert fake.running.wait(30)  # the model holds the flood's first comment
        senders.append(threading.Thread(target=send, args=("flood", "f", 4)))
        senders[-1].start()
        deadline = time.monotonic() + 30
        while service.batcher.queued < 4:
            assert time.monotonic() < deadline, "the flood was never queued"
            time.sleep(0.01)
        more = client.post(PREDICT, json={"comments": [{"text": "more"}]}, headers={"x-api-key": "f"})
        assert more.status_code == 429 and "(--max-client-queue)" in more.json()["error"]["message"]
        senders.append(threading.Thread(target=send, args=("victim", "v", 3)))  # the queue still has room for others
        senders[-1].start()
        while service.batcher.queued < 7:
            assert time.monotonic() < deadline, "the victim was never queued"
            time.sleep(0.01)
        fake.gate.set()
        for sender in senders:
            sender.join(30)
        assert {name: a.status_code for name, a in answers.items()} == {"held": 200, "flood": 200, "victim": 200}
        assert service.batcher._by_client == {}  # nothing kept for clients with nothing waiting


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_body_not_complete_in_time_is_408_and_closed(http):
    import socket

    from kold_span.service.server import ConnectionLimits
    from test_service_http import live_server

    start = (b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    slow = {
        "a byte at a time": start + b"Content-Length: 100\r\n\r\n{",
        "Expect and nothing": start + b"Content-Length: 30\r\nExpect: 100-continue\r\n\r\n",
        "a chunk larger than its data": start + b"Transfer-Encoding: chunked\r\n\r\n64\r\n{\"comments\"",
        "no last chunk": start + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
    }
    with live_server(Fake(), connections=ConnectionLimits(body_timeout=0.5), http=http) as (port, service):
        for name, request in slow.items():
            with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
                conn.sendall(request)
                data = b""
                while chunk := conn.recv(65536):  # the server closes it: bounded by body_timeout, not by us
                    data += chunk
            assert b"HTTP/1.1 408 Request Timeout\r\n" in data and b"(--body-timeout)" in data, (name, data[:200])
        status, _ = raw_request(port, b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status == 200


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_with_every_connection_held_the_probes_still_answer_and_the_rest_is_json_503(http):
    import socket
    import time

    from kold_span.service.server import ConnectionLimits
    from test_service_http import live_server

    limits = ConnectionLimits(max_connections=4, header_timeout=30, max_client_connections=100)
    with live_server(Fake(), connections=limits, http=http) as (port, service):
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]  # idle: they send nothing
        time.sleep(0.2)
        try:
            for probe in ("/livez", "/readyz", "/metrics"):
                status, _ = raw_request(port, f"GET {probe} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                                        .encode())
                assert status == 200, probe
            body = b'{"comments": [{"text": "a"}]}'
            status, data = raw_request(port, b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                             b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                       % (len(body), body))
            head, _, answer = data.partition(b"\r\n\r\n")
            assert status == 503 and b"retry-after: 1" in head.lower()
            assert json.loads(answer)["error"]["field"] == "connections"
        finally:
            for conn in held:
                conn.close()


@pytest.mark.parametrize("proxies, refused", [((), True), (("127.0.0.0/8",), False)])
def test_one_address_holds_at_most_its_share_of_the_connections(proxies, refused):
    import socket
    import time

    from kold_span.service.server import ConnectionLimits
    from test_service_http import live_server

    limits = ConnectionLimits(max_connections=20, max_client_connections=3, header_timeout=30)
    with live_server(Fake(), connections=limits, trusted_proxies=proxies) as (port, service):
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                if refused:  # answered as it arrives, before it sends anything
                    data = b""
                    while chunk := extra.recv(65536):
                        data += chunk
                    assert data.startswith(b"HTTP/1.1 503") and b"(--max-client-connections)" in data
                else:  # a trusted proxy speaks for many clients: its connections are not capped per address
                    extra.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    assert extra.recv(65536).startswith(b"HTTP/1.1 200")
        finally:
            for conn in held:
                conn.close()
        time.sleep(0.2)
        status, _ = raw_request(port, b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status == 200  # the closed connections were counted off

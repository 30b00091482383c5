"""Google's own Perspective client (`google-api-python-client`, built from the discovery document this service
serves) against a real server on 127.0.0.1: analyze with context and spans, suggestscore, a wrong key, an unknown
attribute, an emoji before a span (Perspective counts offsets in UTF-16 units)."""
import json

import pytest

from test_service_hostile import Spanning
from test_service_http import key_file, live_server

discovery = pytest.importorskip("googleapiclient.discovery")
errors = pytest.importorskip("googleapiclient.errors")
httplib2 = pytest.importorskip("httplib2")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("google-client")
    feedback = folder / "feedback.jsonl"
    with live_server(Spanning(), api_keys=str(key_file(folder, moderator="s3cret")),
                     feedback_file=str(feedback)) as (port, service):
        yield f"http://127.0.0.1:{port}", feedback


def client(url, key):
    return discovery.build("commentanalyzer", "v1alpha1", developerKey=key, cache_discovery=False,
                           discoveryServiceUrl=url + "/$discovery/rest?version={apiVersion}",
                           http=httplib2.Http(timeout=30, proxy_info=None))


def test_googles_client_analyzes_with_context_and_spans_at_utf16_offsets(served):
    url, _ = served
    comments = client(url, "s3cret").comments()
    answer = comments.analyze(body={
        "comment": {"text": "😀 너 바보"}, "context": {"entries": [{"text": "기사 제목"}]},
        "requestedAttributes": {"TOXICITY": {}}, "spanAnnotations": True, "clientToken": "t-1"}).execute()
    scores = answer["attributeScores"]["TOXICITY"]
    assert scores["summaryScore"]["type"] == "PROBABILITY" and answer["clientToken"] == "t-1"
    assert [(s["begin"], s["end"]) for s in scores["spanScores"]] == [(5, 7)]  # 바보 after a two-unit emoji


def test_googles_client_suggests_a_score(served):
    url, feedback = served
    answer = client(url, "s3cret").comments().suggestscore(body={
        "comment": {"text": "😀 너 바보"},
        "attributeScores": {"TOXICITY": {"summaryScore": {"value": 1},
                                         "spanScores": [{"begin": 5, "end": 7, "score": {"value": 1}}]}},
        "clientToken": "fix-1"}).execute()
    assert answer == {"clientToken": "fix-1"}
    saved = json.loads(feedback.read_text(encoding="utf-8").splitlines()[-1])
    assert saved["spans"] == {"OFF": [[4, 6]]} and saved["annotations"][0]["annotator"] == "moderator"


@pytest.mark.parametrize("key, body, status", [
    ("wrong", {"comment": {"text": "바보"}, "requestedAttributes": {"TOXICITY": {}}}, 403),
    ("s3cret", {"comment": {"text": "바보"}, "requestedAttributes": {"INSULT": {}}}, 400),
])
def test_googles_client_sees_perspectives_errors(served, key, body, status):
    url, _ = served
    with pytest.raises(errors.HttpError) as raised:
        client(url, key).comments().analyze(body=body).execute()
    assert raised.value.resp.status == status
    assert json.loads(raised.value.content)["error"]["code"] == status

"""The web page in a real browser: Debian's headless chromium, driven by Selenium through chromedriver.

Skipped where chromium or chromedriver is missing, except in CI (CI=true), where `.ci/run` installs
them and a missing browser is a failure. Each run saves a screenshot of the page after an analysis
to checkpoints/screenshots/serve-page.png (docs/img/serve-page.png is a copy), and one of the
threshold sliders on an uploaded file to serve-bands.png beside it (docs/img/serve-bands.png).
"""
import csv
import hashlib
import json
import os
import random
import re

import pytest

from kold_span.text.normalize import hidden_characters
from service_model import ROOT, chromium, get, post, running_server, tiny_model, with_thresholds

FOUND = chromium()
if FOUND is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI: chromium and chromedriver are missing; .ci/run installs them "
                           "(apt-get install chromium chromium-driver fonts-noto-cjk)")
    pytest.skip("needs chromium and chromedriver (apt-get install chromium chromium-driver fonts-noto-cjk)",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402  (only where a browser exists)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# No sandbox (containers), nothing fetched from the network, a profile of its own.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1100,1000", "--lang=ko-KR"]
SCREENSHOT = ROOT / "checkpoints" / "screenshots" / "serve-page.png"
BANDS_SCREENSHOT = SCREENSHOT.with_name("serve-bands.png")  # the sliders on an uploaded file
TITLE = "장관 후보자 청문회 파행"
COMMENT = "저 의원은 진짜 멍청하다. 말하는 것마다 역겹다 ㅋㅋ"


@pytest.fixture(scope="module")
def feedback_file(tmp_path_factory):
    return tmp_path_factory.mktemp("feedback") / "feedback.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory, feedback_file):
    with running_server([tiny_model()], "--feedback", str(feedback_file),
                        log_dir=tmp_path_factory.mktemp("serve")) as server:
        yield server


@pytest.fixture(scope="module")
def tuned_server(tmp_path_factory):
    """The tiny model as dev-tuned: config.json records a P(B) + P(I) threshold of 0.4 for OFF_span."""
    folder = tmp_path_factory.mktemp("tuned")
    model = with_thresholds(tiny_model(), folder / "model", {"OFF_span": [0.4]})
    with running_server([model], log_dir=folder) as server:
        yield server


KEYS = {"ann": "ann-key-0123456789", "bob": "bob-key-9876543210"}


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    """The service with API keys: 3 requests a minute and 3 comments a day per key, and feedback."""
    folder = tmp_path_factory.mktemp("keyed")
    keys = folder / "keys.txt"
    keys.write_text("".join(f"{name} {hashlib.sha256(key.encode()).hexdigest()}\n" for name, key in KEYS.items()))
    with running_server([tiny_model()], "--api-keys", str(keys), "--rate-limit", "3/minute", "--daily-quota", "3",
                        "--feedback", str(folder / "feedback.jsonl"), log_dir=folder) as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    browser_path, driver_path = FOUND
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


def open_page(browser, server):
    browser.get(server.url)
    WebDriverWait(browser, 120).until(lambda d: d.find_element(By.ID, "analyze").is_enabled())


def wait_for(browser, predicate, seconds=60):
    return WebDriverWait(browser, seconds).until(lambda d: predicate(d))


def click_and_read(browser, button, answer):
    """Click a button and return the text of `answer` once the page has shown it."""
    browser.execute_script("showError(arguments[0], '')", answer)
    browser.find_element(By.ID, button).click()
    wait_for(browser, lambda d: d.find_element(By.ID, answer).is_displayed()
             and d.find_element(By.ID, button).is_enabled())
    return browser.find_element(By.ID, answer).text


def upload_csv(browser, path, rows):
    path.write_text("guid,title,comment\n" + "".join(f"g{i},제목 {i},댓글 {i} 바보냐\n" for i in range(rows)),
                    encoding="utf-8")
    browser.find_element(By.ID, "file").send_keys(str(path))
    browser.find_element(By.ID, "upload").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "upload").is_enabled() and any(
        d.find_element(By.ID, shown).is_displayed() for shown in ("file-result", "file-error")))


# The text a box shows, with each hidden-character badge read back as the character it stands for.
READ_BACK = """
const walk = (node) => node.nodeType === Node.TEXT_NODE ? node.data
  : node.classList && node.classList.contains('hidden-char') ? String.fromCodePoint(parseInt(node.dataset.code, 16))
  : Array.from(node.childNodes).map(walk).join('');
"""


def marked_text(root, span_type):
    """The text of the highlighted pieces of one span type, in order."""
    return "".join(m.text for m in root.find_elements(By.CSS_SELECTOR, "mark")
                   if span_type in m.get_attribute("data-types").split())


def test_typing_a_korean_comment_and_title_shows_the_label_and_the_spans(browser, server):
    status, answer = post(server.url + "v1/predict", {"comments": [{"text": COMMENT, "title": TITLE}]})
    [expected] = answer["predictions"]
    off_spans = [s for s in expected["spans"] if s["type"] == "OFF"]
    assert status == 200 and off_spans, "the tiny model marks spans in this training comment"
    open_page(browser, server)
    browser.find_element(By.ID, "context").send_keys(TITLE)
    browser.find_element(By.ID, "comment").send_keys(COMMENT)
    browser.find_element(By.ID, "analyze").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "result").is_displayed())
    row = browser.find_element(By.CSS_SELECTOR, "#labels tr[data-task='OFF']")
    label = row.find_elements(By.TAG_NAME, "td")[1].text
    assert label == str(expected["labels"]["OFF"]["label"]).lower()  # JavaScript writes true as "true"
    assert str(expected["labels"]["OFF"]["probs"]["true"]) in row.text  # unrounded: 0.99988 is not "1.000"
    highlighted = browser.find_element(By.ID, "highlighted")
    assert highlighted.text == COMMENT
    assert marked_text(highlighted, "OFF") == "".join(s["text"] for s in off_spans)
    first = highlighted.find_element(By.CSS_SELECTOR, "mark")
    assert first.get_attribute("title") == f"OFF {off_spans[0]['score']}"  # what hovering shows
    assert "labels false, true" in row.find_element(By.TAG_NAME, "td").get_attribute("title")  # the task explained
    assert highlighted.get_attribute("lang") == "ko"
    # nothing was fetched from anywhere but this server
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(url.startswith(server.url) for url in resources), resources
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and SCREENSHOT.stat().st_size > 20_000


def test_uploading_a_csv_shows_a_table_and_offers_predicts_jsonl(browser, server, tmp_path):
    source = tmp_path / "comments.csv"
    source.write_text("guid,title,comment\n"
                      "g1,예능 출연자 막말 논란,미친놈 아니냐 이거 방송에서 저런 말을 하네\n"
                      "g2,프로야구 개막전 매진,오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다\n"
                      "g3,대표팀 충격의 패배,감독은 전술이 없냐 한심하네\n", encoding="utf-8")
    open_page(browser, server)
    browser.find_element(By.ID, "file").send_keys(str(source))
    browser.find_element(By.ID, "upload").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "file-result").is_displayed())
    rows = browser.find_elements(By.CSS_SELECTOR, "#file-rows tr")
    assert [r.get_attribute("data-id") for r in rows] == ["g1", "g2", "g3"]
    assert "감독은 전술이 없냐 한심하네" in rows[2].text and "OFF:" in rows[2].text
    hover = rows[2].find_element(By.CSS_SELECTOR, "span[title]").get_attribute("title")
    assert hover.endswith("; the most probable label: true when P(true) > 0.5")  # how OFF decided, on hover
    link = browser.find_element(By.ID, "download")
    assert link.get_attribute("download") == "comments.predictions.jsonl"
    offered = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(document.getElementById('download').href).then(r => r.text()).then(done);")
    records = [json.loads(line) for line in offered.splitlines()]
    assert [r["id"] for r in records] == ["g1", "g2", "g3"]
    for row, record in zip(rows, records):  # each row's probabilities, unrounded, and its spans
        assert f"true {record['labels']['OFF']['probs']['true']}" in row.text
        assert all(f"“{s['text']}” [{s['start']}, {s['end']})" in row.text for s in record["spans"])
    _, answer = post(server.url + "v1/predict", {"comments": [{"id": r["id"], "text": r["text"]} for r in records]})
    assert [r["labels"]["OFF"]["label"] for r in records] == \
        [p["labels"]["OFF"]["label"] for p in answer["predictions"]]


def test_a_bad_file_shows_predicts_line_numbered_message(browser, server, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("guid,title,comment\ng1,제목\n", encoding="utf-8")
    open_page(browser, server)
    browser.find_element(By.ID, "file").send_keys(str(bad))
    browser.find_element(By.ID, "upload").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "file-error").is_displayed())
    assert browser.find_element(By.ID, "file-error").text == "bad.csv:2: 2 fields, the header has 3 (guid, title, comment)"
    assert get(server.url + "health")[0] == 200


def test_this_is_wrong_saves_the_other_label_as_feedback(browser, server, feedback_file):
    open_page(browser, server)
    browser.find_element(By.ID, "comment").send_keys(COMMENT)
    browser.find_element(By.ID, "analyze").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "wrong").is_displayed())
    shown = browser.find_element(By.CSS_SELECTOR, "#labels tr[data-task='OFF'] .label-value").text
    browser.find_element(By.ID, "wrong").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "wrong-note").is_displayed())
    assert browser.find_element(By.ID, "wrong-note").text.startswith("Thanks: saved as OFF = ")
    [saved] = [json.loads(line) for line in feedback_file.read_text(encoding="utf-8").splitlines()]
    assert saved["text"] == COMMENT and saved["labels"] == {"OFF": shown != "true"}


def test_this_is_wrong_sends_spans_in_utf16_units_as_suggestscore_reads_them(browser, server):
    open_page(browser, server)
    assert browser.execute_script("return [utf16('😀 너 바보', 4), utf16('😀 너 바보', 6), utf16('너 바보', 2)];") \
        == [5, 7, 2]


def test_errors_are_sentences_for_people(browser, server):
    open_page(browser, server)
    message = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('v1/predict', {method: 'POST', body: JSON.stringify({comments: [{text: ' '}]})})"
        ".then(problem).then(done);")
    assert message == "The comment: empty"


def test_with_keys_the_page_asks_for_one_and_sends_it_in_a_header_on_every_request(browser, keyed_server, tmp_path):
    open_page(browser, keyed_server)
    key = browser.find_element(By.ID, "api-key")
    assert key.is_displayed() and key.get_attribute("type") == "password"
    browser.find_element(By.ID, "comment").send_keys(COMMENT)
    assert click_and_read(browser, "analyze", "analyze-error") == \
        "This service needs an API key: paste yours in the API key field above."
    key.send_keys("not-a-key")
    assert click_and_read(browser, "analyze", "analyze-error") == \
        "The API key was not accepted: check it and paste it again."
    key.clear()
    key.send_keys(KEYS["ann"])
    browser.find_element(By.ID, "analyze").click()  # predict: the 1st request and comment of ann's 3
    wait_for(browser, lambda d: d.find_element(By.ID, "result").is_displayed())
    assert not browser.find_element(By.ID, "analyze-error").is_displayed()
    assert click_and_read(browser, "wrong", "wrong-note").startswith("Thanks: saved as OFF = ")  # feedback: 2nd
    upload_csv(browser, tmp_path / "one.csv", 1)  # the file route: 3rd
    assert [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#file-rows tr")] == ["g0"]
    # the key went in a header: never in a URL the page opened, never kept past the tab
    urls = browser.execute_script("return [location.href, ...performance.getEntriesByType('resource')"
                                  ".map(e => e.name)]")
    assert len(urls) > 4 and not any(KEYS["ann"] in url for url in urls), urls
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.execute_script("return document.cookie") == ""
    open_page(browser, keyed_server)  # a reload in the same tab keeps it (sessionStorage)
    assert browser.find_element(By.ID, "api-key").get_attribute("value") == KEYS["ann"]
    assert KEYS["ann"] not in keyed_server.output()


def test_a_keys_rate_limit_and_quota_are_told_apart_from_a_busy_service(browser, keyed_server, tmp_path):
    open_page(browser, keyed_server)
    browser.execute_script("sessionStorage.clear()")
    open_page(browser, keyed_server)
    browser.find_element(By.ID, "api-key").send_keys(KEYS["bob"])
    upload_csv(browser, tmp_path / "three.csv", 3)  # request 1 of 3 this minute, comments 3 of 3 today
    assert browser.find_element(By.ID, "file-result").is_displayed()
    browser.find_element(By.ID, "comment").send_keys("한 줄 더")
    quota = r"Your API key has used its daily quota of comments\. Try again in (about )?2[34] hours\."
    # requests 2 and 3; the wait to midnight may cross a whole number of hours between them (exact, then "about")
    for said in (click_and_read(browser, "analyze", "analyze-error") for _ in range(2)):
        assert re.fullmatch(quota, said), said
    rate = click_and_read(browser, "analyze", "analyze-error")  # request 4: past 3 a minute
    assert re.fullmatch(r"Your API key has sent too many requests\. Try again in (\d+ seconds?|1 minute)\.", rate), rate


def test_each_refusal_is_a_sentence_and_retry_after_is_said_in_words(browser, server):
    open_page(browser, server)
    said = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const answer = (status, errorType, retry) => new Response(JSON.stringify({error: {code: status,
            message: "m", field: "key", details: errorType ? [{errorType}] : undefined}}),
            {status, headers: retry ? {"Retry-After": String(retry)} : {}});
        Promise.all([answer(429, "QUEUE_FULL", 3), answer(429, null, 1), answer(429, "RATE_LIMIT_EXCEEDED", 90),
                     answer(429, "QUOTA_EXCEEDED", 86399), answer(507, "FEEDBACK_FULL"), answer(401),
                     answer(403)].map(problem))
          .then((sentences) => done([sentences, [1, 2, 59, 60, 61, 3600, 3601, 7200].map(inWords)]));""")
    sentences, words = said
    assert sentences == [
        "The service is busy right now. Try again in 3 seconds.",
        "The service is busy right now. Try again in 1 second.",
        "Your API key has sent too many requests. Try again in about 2 minutes.",
        "Your API key has used its daily quota of comments. Try again in about 24 hours.",
        "The feedback file is full: tell the people who run this service.",
        "This service needs an API key: paste yours in the API key field above.",
        "The API key was not accepted: check it and paste it again.",
    ]
    assert words == ["1 second", "2 seconds", "59 seconds", "1 minute", "about 2 minutes", "1 hour", "about 2 hours",
                     "2 hours"]
    assert not browser.find_element(By.ID, "api-key").is_displayed()  # no keys here: no key field


HIDDEN_SAMPLES = ["a\u200bb\u202ec \U0001F468\u200d\U0001F469 \ufe01", "바\u00ad보\ufeff", "\u2067abc\u2069 x\u061c",
                  "\u2764\ufe0f \u2764\ufe0e a\ufe0f", "멍\u200d청", "क\u200dष",
                  "\U0001F3F4\U000E0067\U000E0062\U000E007F",
                  "tab\tnew\nline\x07bell\x85", "\u3164\u115f\u1160\uffa0", "\u200e\u200f\u202a\u202b\u202c\u202d",
                  "\u2060\u2061\u2062\u2063\u2064 \u034f\u180e", "\U000E0100x", "\U0001F1F0\U0001F1F7", ""]


def test_the_pages_hidden_characters_are_the_normalizers(browser, server):
    """The page's table of hidden characters against text.normalize's (by example and 300 random texts)."""
    pool = "가a1 .\u200b\u200c\u200d\u202e\u2066\u2069\u00ad\ufeff\ufe0f\ufe00\u061c\x01\u3164\u2764" \
           "\U0001F468\U0001F469\U0001F1F0\U000E0067ж\u0915"
    rng = random.Random(45)
    texts = HIDDEN_SAMPLES + ["".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    open_page(browser, server)
    found = browser.execute_script("return arguments[0].map(hiddenCharacters)", texts)
    for text, page in zip(texts, found):
        assert [tuple(pair) for pair in page] == hidden_characters(text), ascii(text)


def test_hidden_characters_are_shown_as_badges_and_a_bidi_override_reverses_nothing(browser, server):
    text = "ab\u202ecd\u200bef\u00ad \ufeff바\u2067보\ufe0f \U0001F468\u200d\U0001F469 \u2764\ufe0f"
    spans = [{"type": "OFF", "start": 3, "end": 7, "text": text[3:7], "score": 0.9}]
    open_page(browser, server)
    shown = browser.execute_script(READ_BACK + """
        showPrediction({text: arguments[0], labels: {}, spans: arguments[1], signals: {invisible: 4, bidi: 2}});
        const box = document.getElementById('highlighted');
        const letters = [], walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        for (let node; (node = walker.nextNode());) {
          if (node.parentNode.classList.contains('hidden-char')) continue;
          let at = 0;
          for (const c of node.data) {
            const range = document.createRange();
            range.setStart(node, at); range.setEnd(node, at + c.length); at += c.length;
            letters.push([c, range.getBoundingClientRect().left]);
          }
        }
        return {readBack: walk(box), textContent: box.textContent,
                badges: Array.from(box.querySelectorAll('.hidden-char')).map(b => [b.dataset.code, b.textContent]),
                marked: Array.from(box.querySelectorAll('mark')).map(walk).join(''),
                spanItem: walk(document.querySelector('#spans li')),
                bidi: getComputedStyle(box).unicodeBidi, letters,
                signals: document.getElementById('signals').textContent,
                signalsShown: !document.getElementById('signals').hidden};""", text, spans)
    assert shown["readBack"] == text  # every character is there, hidden ones as badges
    expected = hidden_characters(text)
    assert [(int(code, 16), name) for code, name in shown["badges"]] == [(ord(text[i]), n) for i, n in expected]
    assert [name for _, name in shown["badges"]][:4] == ["RLO", "ZWSP", "SHY", "BOM"]
    assert not set("\u202e\u200b\u00ad\ufeff\u2067") & set(shown["textContent"])  # shown, never acting
    assert "\U0001F468\u200d\U0001F469" in shown["textContent"]  # an emoji sequence stays whole
    assert shown["marked"] == text[3:7] and "cd" in shown["spanItem"] and "\u200b" in shown["spanItem"]
    assert shown["bidi"] in ("isolate", "plaintext")
    left = {c: x for c, x in shown["letters"]}
    assert left["a"] < left["b"] < left["c"] < left["d"] < left["e"] < left["f"], shown["letters"]  # not reversed
    assert shown["signalsShown"] and "invisible 4" in shown["signals"] and "bidi 2" in shown["signals"]


def test_a_typed_comment_with_hidden_characters_keeps_its_spans_on_the_right_characters(browser, server):
    text = "저 의원은\u202e 진짜 멍\u200b청하다. 말하는 것마다 역겹다 ㅋㅋ"
    status, answer = post(server.url + "v1/predict", {"comments": [{"text": text}]})
    [expected] = answer["predictions"]
    assert status == 200
    open_page(browser, server)
    browser.find_element(By.ID, "comment").send_keys(text)
    browser.find_element(By.ID, "analyze").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "result").is_displayed())
    shown = browser.execute_script(READ_BACK + """
        const box = document.getElementById('highlighted');
        return {readBack: walk(box), textContent: box.textContent,
                marks: Array.from(box.querySelectorAll('mark'))
                  .map(m => [+m.dataset.start, +m.dataset.end, walk(m)])};""")
    assert shown["readBack"] == text and "\u202e" not in shown["textContent"]
    for start, end, piece in shown["marks"]:
        assert piece == text[start:end]
    covered = {i for s in expected["spans"] for i in range(s["start"], s["end"])}
    assert {i for start, end, _ in shown["marks"] for i in range(start, end)} == covered


def test_the_page_says_how_each_task_decides(browser, tuned_server):
    """Next to the probabilities: the top label for OFF, and OFF_span's threshold as the model directory records it."""
    open_page(browser, tuned_server)
    browser.find_element(By.ID, "comment").send_keys(COMMENT)
    browser.find_element(By.ID, "analyze").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "result").is_displayed())
    row = browser.find_element(By.CSS_SELECTOR, "#labels tr[data-task='OFF']")
    # labels false, true: np.argmax gives a tie to false, so true needs P(true) > 0.5
    assert row.find_element(By.CSS_SELECTOR, ".rule").text == "the most probable label: true when P(true) > 0.5"
    rules = browser.find_element(By.CSS_SELECTOR, "#span-rules [data-task='OFF_span']")
    assert rules.text == "OFF_span: a token is in a span when P(B) + P(I) ≥ 0.4"
    # a multi-label task's tuned thresholds, said per label (the tiny model has none: its /info entry, given)
    said = browser.execute_script(
        "state.tasks.TGT = {name: 'TGT', kind: 'sequence', problem: 'multi', labels: ['group', 'individual'],"
        " decision: {rule: 'threshold', thresholds: {group: 0.35000000000000003, individual: 0.6}}};"
        "state.tasks.GRP = {name: 'GRP', kind: 'sequence', problem: 'multi', labels: ['men', 'women'],"
        " decision: {rule: 'threshold', thresholds: {men: 0.5, women: 0.5}}};"
        "return [ruleText('TGT'), ruleText('GRP')];")
    assert said == ["marked when P ≥ 0.35 (group), 0.6 (individual)", "each label marked when P ≥ 0.5"]


def test_the_page_shows_each_tasks_action_and_what_its_band_promised(browser, server):
    """A model with a decision policy: the band per task, in colour, with /info's sentence under it."""
    open_page(browser, server)
    WebDriverWait(browser, 60).until(lambda d: d.execute_script("return Boolean(state.tasks.OFF)"))
    shown = browser.execute_script(
        "state.tasks.OFF.policy_in_words = ['remove when P(OFF = true) >= 0.9: as promised'];"
        "showPrediction({text: '바보', labels: {}, spans: [], actions: {OFF: 'remove'}});"
        "const box = document.getElementById('actions-box');"
        "const first = [box.hidden, document.querySelector('#actions .action-remove').textContent,"
        "               document.getElementById('actions').textContent];"
        "showPrediction({text: '바보', labels: {}, spans: []});"
        "return [...first, box.hidden];")
    assert shown == [False, "remove", "OFF: removeremove when P(OFF = true) >= 0.9: as promised", True]
    # spans are shown for review and remove, not for a comment every band allows (nor hidden without a policy)
    spans = "[{type: 'OFF', start: 0, end: 2, text: '바보', score: 0.7}]"
    marks = browser.execute_script(
        "const marks = () => [document.querySelectorAll('#highlighted mark').length,"
        "                     document.getElementById('spans').textContent];"
        f"showPrediction({{text: '바보', labels: {{}}, spans: {spans}, actions: {{OFF: 'review'}}}});"
        "const review = marks();"
        f"showPrediction({{text: '바보', labels: {{}}, spans: {spans}, actions: {{OFF: 'allow'}}}});"
        "const allow = marks();"
        f"showPrediction({{text: '바보', labels: {{}}, spans: {spans}}});"
        "return [review, allow, marks()];")
    assert marks[0][0] == 1 and marks[0][1].startswith("OFF “바보”")
    assert marks[1] == [0, "allowed: its 1 span is not shown"]
    assert marks[2] == marks[0]


# The review band on the page: sliders that redo each uploaded comment's action from its score, in the page.

def policy_band(threshold):
    """A band of a decision policy as `kold-span thresholds` saves it (what it promised: made up here)."""
    return {"threshold": threshold, "target": "precision=0.9", "precision": 0.9, "recall": 0.5, "f1": 0.6,
            "flagged": 0.2, "benign_flagged": None, "precision_interval": [0.85, 0.95], "recall_interval": [0.4, 0.6],
            "bootstrap": {"samples": 1000, "seed": 0, "level": 0.95}, "examples": 8, "data": "dev.jsonl",
            "data_sha256": "ab" * 32, "date": "2026-12-06T07:00:00Z"}


def band_comments():
    """Eight comments of the tiny model's training fixture, as (guid, title, comment)."""
    rows = json.loads((ROOT / "tests/fixtures/kold_small.json").read_text(encoding="utf-8"))[:8]
    return [(r["guid"], r["title"], r["comment"]) for r in rows]


def thirds(scores):
    """review and remove thresholds halfway between scores: about a third of the texts in each band."""
    s = sorted(set(scores))
    assert len(s) >= 3, s
    n = len(s)
    return (s[n // 3 - 1] + s[n // 3]) / 2, (s[2 * n // 3 - 1] + s[2 * n // 3]) / 2


def expected_action(score, review, remove):
    """`models.decoding.action`, the server's rule, on one score."""
    from kold_span.models.decoding import action

    return action({"label": None, "review": None if review is None else {"threshold": review},
                   "remove": None if remove is None else {"threshold": remove}}, score)


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory):
    """The tiny model with a decision policy on OFF and OFF_span whose bands split `band_comments` into thirds,
    found from the scores of a first policy (everything reviewed) on the same comments; access log on."""
    from kold_span.inference.predictor import Predictor
    from kold_span.training.calibration import Calibration

    folder = tmp_path_factory.mktemp("policy")
    tiny = Predictor.from_pretrained(tiny_model())
    everything = {"label": None, "review": policy_band(0.0), "remove": policy_band(1.0)}
    first = Calibration(decisions={"OFF": {**everything, "label": "true"}, "OFF_span": everything}).apply_to(tiny)
    rows = first.predict([comment for _, _, comment in band_comments()],
                         [title for _, title, _ in band_comments()])
    decisions = {}
    for task, label in (("OFF", "true"), ("OFF_span", None)):
        review, remove = thirds([row["action_scores"][task] for row in rows])
        decisions[task] = {"label": label, "review": policy_band(review), "remove": policy_band(remove)}
    model = Calibration(decisions=decisions).apply_to(tiny).save_pretrained(folder / "model")
    with running_server([model], "--access-log", "json", log_dir=folder) as server:
        yield server, decisions


def upload_band_comments(browser, server, tmp_path):
    """Upload `band_comments` as a CSV on the page; the JSONL the page offers, parsed."""
    source = tmp_path / "band.csv"
    with source.open("w", encoding="utf-8", newline="") as sink:
        csv.writer(sink).writerows([("guid", "title", "comment"), *band_comments()])
    open_page(browser, server)
    browser.find_element(By.ID, "file").send_keys(str(source))
    browser.find_element(By.ID, "upload").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "file-result").is_displayed())
    offered = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(document.getElementById('download').href).then(r => r.text()).then(done);")
    return [json.loads(line) for line in offered.splitlines()]


def page_actions(browser):
    """Per file row, the action the page shows for each task, and its row's colour (the strongest action)."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#file-rows tr')).map(tr => [tr.dataset.action,"
        " Object.fromEntries(Array.from(tr.querySelectorAll('.row-actions [data-task]'))"
        "   .map(b => [b.dataset.task, b.dataset.action]))]);")


def row_spans(browser):
    """Per file row, its span lines shown and its highlighted pieces' count of distinct spans' starts."""
    return [tuple(pair) for pair in browser.execute_script(
        "return Array.from(document.querySelectorAll('#file-rows tr')).map(tr => ["
        " Array.from(tr.querySelectorAll('.row-span')).filter(line => !line.hidden).length,"
        " tr.querySelectorAll('.row-text mark').length ? new Set(Array.from(tr.querySelectorAll('.row-span'))"
        "   .map(line => line.textContent)).size : 0]);")]


def summary(browser, task):
    box = browser.find_element(By.CSS_SELECTOR, f"fieldset.band[data-task='{task}'] .band-summary")
    return {k: int(box.get_attribute(f"data-{k}")) for k in ("allow", "review", "remove", "changed")}


def requests_logged(server):
    return sum(1 for line in server.output().splitlines() if line.startswith("{") and '"method"' in line)


def test_the_sliders_redo_the_servers_actions_in_the_page_and_send_nothing(browser, policy_server, tmp_path):
    server, decisions = policy_server
    records = upload_band_comments(browser, server, tmp_path)
    assert [r["id"] for r in records] == [g for g, _, _ in band_comments()]
    worst = ["allow", "review", "remove"]
    # at the policy's own thresholds the page finds exactly the actions the server answered
    shown = page_actions(browser)
    assert [actions for _, actions in shown] == [r["actions"] for r in records]
    assert [colour for colour, _ in shown] == [max(r["actions"].values(), key=worst.index) for r in records]
    # spans are shown for review and remove: an allowed comment's text is plain and its span lines hidden
    colours = [colour for colour, _ in shown]
    assert any(c != "allow" and r["spans"] for c, r in zip(colours, records))
    shown_spans = row_spans(browser)
    assert shown_spans == [(0, 0) if c == "allow" else (len(r["spans"]), len(r["spans"])) if r["spans"]
                           else (0, 0) for c, r in zip(colours, records)]
    for task in ("OFF", "OFF_span"):
        counts = {a: [r["actions"][task] for r in records].count(a) for a in worst}
        assert summary(browser, task) == {**counts, "changed": 0}
        assert min(counts.values()) >= 1, (task, counts)  # the thirds: every band holds a comment
        box = browser.find_element(By.CSS_SELECTOR, f"fieldset.band[data-task='{task}']")
        for band in ("review", "remove"):  # each number box says the policy's threshold
            number = box.find_element(By.CSS_SELECTOR, f"input[type=number][data-band={band}]")
            assert float(number.get_attribute("value")) == pytest.approx(decisions[task][band]["threshold"], abs=1e-5)
    browser.execute_script("document.getElementById('bands').scrollIntoView()")
    BANDS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(BANDS_SCREENSHOT))  # docs/img/serve-bands.png is a copy
    before = (requests_logged(server), browser.execute_script("return performance.getEntries().length"))
    assert before[0] >= 4  # the log counts requests: the page, /info, /health, the upload
    # the keyboard: Home puts OFF's remove slider at 0, where every comment with a score is removed
    off = browser.find_element(By.CSS_SELECTOR, "fieldset.band[data-task='OFF']")
    remove_slider = off.find_element(By.CSS_SELECTOR, "input[type=range][data-band=remove]")
    remove_slider.send_keys(Keys.HOME)
    assert remove_slider.get_attribute("value") == "0"
    assert off.find_element(By.CSS_SELECTOR, "input[type=number][data-band=remove]").get_attribute("value") == "0"
    assert [a["OFF"] for _, a in page_actions(browser)] == ["remove"] * len(records)
    assert [shown for shown, _ in row_spans(browser)] == [len(r["spans"]) for r in records]  # all shown again
    moved = sum(r["actions"]["OFF"] != "remove" for r in records)
    assert summary(browser, "OFF") == {"allow": 0, "review": 0, "remove": len(records), "changed": moved}
    remove_slider.send_keys(Keys.ARROW_RIGHT)  # one step: 0.01
    assert remove_slider.get_attribute("value") == "0.01"
    review = decisions["OFF"]["review"]["threshold"]
    assert [a["OFF"] for _, a in page_actions(browser)] == \
        [expected_action(r["action_scores"]["OFF"], review, 0.01) for r in records]
    # an exact value typed for the span task's review threshold: between two of its scores
    spans = sorted({r["action_scores"]["OFF_span"] for r in records})
    typed = round((spans[0] + spans[1]) / 2, 6)
    span_box = browser.find_element(By.CSS_SELECTOR, "fieldset.band[data-task='OFF_span']")
    number = span_box.find_element(By.CSS_SELECTOR, "input[type=number][data-band=review]")
    number.clear()
    number.send_keys(str(typed))
    remove = decisions["OFF_span"]["remove"]["threshold"]
    expected = [expected_action(r["action_scores"]["OFF_span"], typed, remove) for r in records]
    assert [a["OFF_span"] for _, a in page_actions(browser)] == expected
    lowest = sum(r["action_scores"]["OFF_span"] == spans[0] for r in records)
    assert summary(browser, "OFF_span")["allow"] == expected.count("allow") == lowest  # only the lowest score
    # the review band off: what it reviewed is allowed
    span_box.find_element(By.CSS_SELECTOR, "input[type=checkbox][data-band=review]").click()
    assert [a["OFF_span"] for _, a in page_actions(browser)] == \
        [expected_action(r["action_scores"]["OFF_span"], None, remove) for r in records]
    assert summary(browser, "OFF_span")["review"] == 0
    # every band off: every comment allowed, and shown plain, its span lines hidden
    browser.execute_script("for (const t of ['OFF', 'OFF_span']) for (const b of ['review', 'remove'])"
                           " setBand(t, b, null); showActions();")
    assert {colour for colour, _ in page_actions(browser)} == {"allow"} and any(r["spans"] for r in records)
    assert row_spans(browser) == [(0, 0)] * len(records)
    # back to the model's thresholds: the server's actions again
    for box in (off, span_box):
        box.find_element(By.CSS_SELECTOR, "button.reset").click()
    assert [actions for _, actions in page_actions(browser)] == [r["actions"] for r in records]
    assert row_spans(browser) == shown_spans
    # nothing was sent while the sliders moved: no request in the server's log, none in the page's
    after = (requests_logged(server), browser.execute_script("return performance.getEntries().length"))
    assert after == before


def test_the_pages_rule_is_the_servers_on_hand_checked_scores(browser, server):
    """`actionAt` against `models.decoding.action`: at, above and below each threshold, a band off, no score."""
    cases = [(0.9, 0.5, 0.9), (0.8999, 0.5, 0.9), (0.5, 0.5, 0.9), (0.4999, 0.5, 0.9), (None, 0.0, 0.0),
             (0.3, None, 0.2), (0.1, None, 0.2), (0.3, 0.2, None), (0.1, 0.2, None), (0.6, 0.7, 0.5), (0.0, 0.0, 1.0),
             (1.0, 0.0, 1.0), (0.7, None, None)]
    hand = ["remove", "review", "review", "allow", "allow", "remove", "allow", "review", "allow", "remove", "review",
            "remove", "allow"]
    open_page(browser, server)
    page = browser.execute_script("return arguments[0].map(c => actionAt(...c))", [list(c) for c in cases])
    assert page == hand == [expected_action(*c) for c in cases]


def test_a_model_without_a_policy_shows_no_sliders(browser, server, tmp_path):
    open_page(browser, server)
    upload_csv(browser, tmp_path / "plain.csv", 2)
    assert not browser.find_element(By.ID, "bands").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#file-rows .row-actions [data-task]") == []

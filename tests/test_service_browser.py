"""The web page in a real browser: Debian's headless chromium, driven by Selenium through chromedriver.

Skipped where chromium or chromedriver is missing, except in CI (CI=true), where `.ci/run` installs
them and a missing browser is a failure. Each run saves a screenshot of the page after an analysis
to checkpoints/screenshots/serve-page.png (docs/img/serve-page.png is a copy).
"""
import json
import os

import pytest

from service_model import ROOT, chromium, get, post, running_server, tiny_model

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
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# No sandbox (containers), nothing fetched from the network, a profile of its own.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1100,1000", "--lang=ko-KR"]
SCREENSHOT = ROOT / "checkpoints" / "screenshots" / "serve-page.png"
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


def test_errors_are_sentences_for_people(browser, server):
    open_page(browser, server)
    message = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('v1/predict', {method: 'POST', body: JSON.stringify({comments: [{text: ' '}]})})"
        ".then(problem).then(done);")
    assert message == "The comment: empty"

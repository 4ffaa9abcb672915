"""`--format html`: one self-contained page per command that carries the JSON report whole,
and whose every link lands on something in the page."""

import json
import re
from html.parser import HTMLParser

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.render.html.page import DATA_ID, POLICY, embed

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
REPORTS = {
    "check": ["check", "--preset", "naive", "--instance", "ack_loss", "--instance", "cancel"],
    "validate": ["validate", "tests/fixtures/logs/ack_loss-bad.jsonl"],
    "validate-from": [
        "validate",
        "--from",
        "langgraph",
        "tests/fixtures/traces/langgraph-crash-1.jsonl",
        "tests/fixtures/traces/langgraph-crash-2.jsonl",
        "--checkpoints",
        "tests/fixtures/traces/langgraph-crash-checkpoints.jsonl",
        "--effectful",
        "refund",
        "--ledger",
        "tests/fixtures/traces/langgraph-crash-ledger.jsonl",
    ],
    "validate-key": ["validate", "tests/fixtures/logs/ack_loss-bad.jsonl", "--key", "k1"],
    "ask": ["ask", "multi-orchestrator"],
    "design": ["design", "--env", "ideal", "--instance", "ack_loss"],
}


class _Page(HTMLParser):
    """Ids, link targets, loads and the data block of a page."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.loads, self.metas, self.svgs = set(), [], [], [], 0
        self.data, self._in_data = "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if a.get("href"):
            self.links.append(a["href"])
        for name in ("src", "srcset", "data", "poster"):
            if name in a:
                self.loads.append((tag, a[name]))
        if tag in ("link", "iframe", "object", "embed", "img", "audio", "video", "base"):
            self.loads.append((tag, a))
        if tag == "meta":
            self.metas.append(a)
        if tag == "svg":
            self.svgs += 1
        if tag == "script":
            assert a.get("type") == "application/json", "no script runs in a report"
            self._in_data = a.get("id") == DATA_ID

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data += data


def _timeless(doc):
    """`doc` without its wall times (two runs of one command differ only there)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if k != "seconds"}
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


def _run(argv, fmt, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    main([*argv, "--format", fmt])
    return capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_the_page_carries_the_json_report_and_loads_nothing(name, capsys, monkeypatch):
    page = _run(REPORTS[name], "html", capsys, monkeypatch)
    data = _run(REPORTS[name], "json", capsys, monkeypatch)
    p = _Page()
    p.feed(page)
    assert _timeless(json.loads(p.data)) == _timeless(json.loads(data))
    assert {"http-equiv": "Content-Security-Policy", "content": POLICY} in p.metas
    assert not p.loads
    assert not re.search(r"url\((?!#)|@import", page)
    assert p.svgs >= 1
    missing = [h for h in p.links if not (h.startswith("#") and h[1:] in p.ids)]
    assert not missing, f"links to nothing in the page: {missing[:3]}"


def test_a_counterexample_diagram_has_a_band_per_step_each_linked_to_its_state(capsys, monkeypatch):
    page = _run(
        ["check", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"],
        "html",
        capsys,
        monkeypatch,
    )
    steps = json.loads(
        _run(
            ["check", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"],
            "json",
            capsys,
            monkeypatch,
        )
    )
    n = steps["instances"][0]["verdicts"][0]["steps"]
    pid = "cx-ack_loss-I1"
    for k in range(1, n + 1):
        assert f'<a href="#{pid}-s{k}"><g id="{pid}-d{k}" class="step">' in page
        assert f'<tr id="{pid}-s{k}"><td><a href="#{pid}-d{k}">{k}</a>' in page
    assert f"{pid}-d{n + 1}" not in page


def test_a_finding_timeline_has_a_lane_per_writer_and_every_event_with_its_file_line(
    capsys, monkeypatch
):
    page = _run(REPORTS["validate"], "html", capsys, monkeypatch)
    doc = json.loads(_run(REPORTS["validate"], "json", capsys, monkeypatch))
    for i, f in enumerate(doc["findings"], 1):
        section = page.split(f'<section id="finding-{i}">')[1].split("</section>")[0]
        lanes = {
            s["writer"] or ("provider" if s["kind"] == "effect" else "log") for s in f["steps"]
        }
        for w in lanes:
            assert f">{w}<title>" in section
        for s in f["steps"]:
            assert f"{s['file']}:{s['line']}" in section


def test_the_embedded_json_survives_a_closing_script_tag_in_a_string():
    data = json.dumps({"note": "</script><script>alert(1)</script>"})
    block = embed(data)
    assert block.count("</script>") == 1
    inner = block.split(">", 1)[1].rsplit("</script>", 1)[0]
    assert json.loads(inner) == json.loads(data)


def test_every_step_of_every_stored_counterexample_has_a_message_to_draw():
    from toolcommit.checker.render.counterexample import messages, parse_itf
    from toolcommit.checker.verify.hyper import personality_instance
    from toolcommit.model.instance import instance
    from toolcommit.model.knobs import preset
    from toolcommit.model.semantics import build

    actions = set()
    for path in sorted((ROOT / "counterexamples").glob("*/*/*.itf.json")):
        p, inst = path.parts[-3], path.parts[-2]
        if p not in ("naive", "seed"):
            continue
        doc = json.loads(path.read_text())
        target = (
            personality_instance(doc["#meta"]["instance"].split("/")[1])
            if inst == "personalities"
            else instance(inst)
        )
        cx = parse_itf(doc, build(preset(p), target, wipe=path.name.startswith("P4.")))
        for st in cx.steps[1:]:
            assert messages(cx, st), st.action
            actions.add(st.action)
    assert len(actions) > 15

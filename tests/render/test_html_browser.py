"""The HTML reports in a real browser: Debian's Chromium, headless and offline, renders each
kind of report; its screenshot shows the diagrams drawn, and its DOM holds every element the
page wrote.

With TOOLCOMMIT_SCREENSHOTS=write the test also stores the top of each screenshot as
docs/check.md's picture of that report (tests/screenshots/, palette PNGs to keep them small):
`TOOLCOMMIT_SCREENSHOTS=write python -m pytest -q tests/render/test_html_browser.py`.
"""

import os
import re
import shutil
import subprocess

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.render.html.sequence import CALL
from toolcommit.checker.render.html.timeline import LANE_COLOUR

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# a real browser per page (about 10 s in all): with -m slow
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)"),
    pytest.mark.slow,
]
Image = pytest.importorskip("PIL.Image", reason="needs pillow (the test extra)")

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
SHOTS = ROOT / "tests" / "screenshots"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]
WIDTH, TALL, README_HEIGHT = 1200, 6000, 860
# (page, the picture in docs/check.md it makes or None, command, the colour its diagrams
# draw with, pixels of it at least)
REPORTS = [
    (
        "check",
        "check",
        [
            "check",
            "--preset",
            "naive",
            "--set",
            "on_unknown=reconcile",
            "--instance",
            "ack_loss",
            "--property",
            "I1",
        ],
        CALL,
        300,
    ),
    (
        "validate",
        "validate",
        ["validate", "tests/fixtures/logs/zombie-bad.jsonl"],
        LANE_COLOUR,
        1500,
    ),
    pytest.param(
        "ask-late-replay",
        None,
        ["ask", "late-replay", "--env", "stripe"],
        CALL,
        300,
        marks=pytest.mark.slow,
    ),  # a second ask page, no picture: with -m slow
    ("ask-failure-classes", "ask", ["ask", "failure-classes"], CALL, 300),
    (
        "design",
        "design",
        ["design", "--env", "stripe", "--instance", "ack_loss", "--instance", "give_up_retry"],
        CALL,
        300,
    ),
]


def _rgb(colour: str) -> tuple:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


def _chromium(tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"  # an empty profile per run, removed with tmp_path
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pixels(image, colour: str, tolerance: int = 8) -> int:
    r0, g0, b0 = _rgb(colour)
    return sum(
        n
        for n, (r, g, b) in image.getcolors(image.width * image.height)
        if abs(r - r0) <= tolerance and abs(g - g0) <= tolerance and abs(b - b0) <= tolerance
    )


@pytest.mark.parametrize(
    "kind,picture,argv,colour,least",
    REPORTS,
    ids=[(r.values if hasattr(r, "values") else r)[0] for r in REPORTS],
)
def test_chromium_renders_the_report_with_its_diagrams(
    kind, picture, argv, colour, least, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(ROOT)
    main([*argv, "--format", "html"])
    page = tmp_path / f"{kind}.html"
    page.write_text(capsys.readouterr().out, "utf-8")
    url = page.as_uri()

    shot = tmp_path / f"{kind}.png"
    r = _chromium(tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{TALL}", url)
    assert shot.is_file(), r.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, TALL)
    drawn = _pixels(image, colour)
    assert drawn >= least, f"{kind}: {drawn} pixels of the diagrams' {colour}, want {least}+"

    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    wrote = page.read_text("utf-8")
    for element in ("<svg", "<line", "<rect", "<text"):
        assert dom.count(element) == wrote.count(element) > 0, element
    assert (
        len(re.findall(r'class="(?:step|event)"', dom))
        == len(re.findall(r'class="(?:step|event)"', wrote))
        > 0
    )

    if picture and os.environ.get("TOOLCOMMIT_SCREENSHOTS") == "write":
        SHOTS.mkdir(parents=True, exist_ok=True)
        top = image.crop((0, 0, WIDTH, README_HEIGHT)).quantize(128)
        top.save(SHOTS / f"{picture}.png", optimize=True)

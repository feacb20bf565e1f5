"""Token view: classes per token, HTML content, and a headless-Chromium screenshot with the three colours."""
import shutil
import subprocess

import pytest

from jobs.report.token_view import COLOURS, render_html, token_classes


def test_token_classes():
    # step 1: 2 accepted + target token; step 2: 0 accepted + target; step 3: EOS cut after 1 accepted draft
    assert token_classes([2, 0, 3], [3, 1, 1]) == [("draft", 0), ("draft", 0), ("target", 0), ("target", 1), ("draft", 2)]


def page():
    return render_html(["<p>", "rompt "], ["Hello", " world", "!", " Bye"], [2, 0], [3, 1], [4, 4], [4, 5], "demo")


def test_html_has_legend_tokens_and_hover_details():
    h = page()
    assert h.count('class="tok draft"') == 2 + 1 and h.count('class="tok target"') == 2 + 1
    assert "&lt;p&gt;" in h and 'title="step 1: k_max=4, drafted 4, accepted 2"' in h


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_headless_chromium_renders_the_three_colours(tmp_path):
    from PIL import Image

    html = tmp_path / "view.html"
    html.write_text(page())
    png = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", "--window-size=800,300",
                    html.as_uri()], check=True, timeout=120, capture_output=True)
    img = Image.open(png).convert("RGB")
    colours = set(img.getdata())
    assert len(colours) > 10                                    # not blank
    for hexc in COLOURS.values():
        rgb = tuple(int(hexc[i:i + 2], 16) for i in (1, 3, 5))
        assert any(sum(abs(a - b) for a, b in zip(c, rgb)) < 12 for c in colours), hexc

# SPDX-License-Identifier: Apache-2.0
"""Figure round trips with the real matplotlib (the matplotlib test image,
Debian with python3-matplotlib): every figure a call creates comes back as
a PNG, which is decoded here to the size it was drawn at."""

import base64
import os
import struct
import zlib

import pytest

import hutch
from hutch.compat.llm_sandbox import ArtifactSandboxSession

MPL = os.environ.get("HUTCH_TEST_MATPLOTLIB_IMAGE")
pytestmark = pytest.mark.skipif(not MPL, reason="HUTCH_TEST_MATPLOTLIB_IMAGE is not set")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# channels per PNG colour type
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def png_size(data):
    """(width, height) of a PNG, after checking its signature, every
    chunk's CRC and that its image data inflates to exactly the rows that
    size makes: a whole, decodable PNG, not just a header."""
    assert data[:8] == PNG_SIGNATURE
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, kind
        chunks.append((kind, body))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert depth == 8 and interlace == 0
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == height * (1 + width * CHANNELS[ctype])
    return width, height


DRAW = (
    "import matplotlib.pyplot as plt\n"
    "f = plt.figure(figsize=(4, 3), dpi=50); plt.plot([1, 3, 2])\n"
    "g = plt.figure(figsize=(2, 2), dpi=40); plt.bar([1, 2], [3, 4])\n"
    "print('drawn')\n"
    "plt.get_backend()"
)


@pytest.fixture(scope="module")
def mpl():
    with hutch.Sandbox(MPL) as s:
        yield s


def test_interpreter_returns_each_figure_as_png(mpl):
    with mpl.interpreter() as it:
        r = it.run(DRAW, timeout=120)
        assert r.ok, r.error
        assert r.stdout == "drawn\n" and r.value.lower() == "'agg'"
        assert [png_size(f) for f in r.figures] == [(200, 150), (80, 80)]
        # They were closed once returned; a later call returns only its own.
        r = it.run("plt.figure(figsize=(1, 1), dpi=30); plt.plot([0, 1])\nlen(plt.get_fignums())")
        assert r.value == "1" and [png_size(f) for f in r.figures] == [(30, 30)]
        r = it.run("1 + 1")
        assert r.value == "2" and r.figures == []


def test_a_figure_as_the_value_is_its_png(mpl):
    # As Jupyter shows a figure that is a cell's value: image/png in its
    # display data, and not once more among the open figures.
    with mpl.interpreter() as it:
        r = it.run(
            "import matplotlib.pyplot as plt\n"
            "other = plt.figure(figsize=(1, 1), dpi=30); plt.plot([0, 1])\n"
            "fig, ax = plt.subplots(figsize=(3, 2), dpi=50); ax.plot([1, 2])\n"
            "fig",
            timeout=120,
        )
        assert r.ok, r.error
        assert r.value.startswith("<Figure size 150x100")
        assert png_size(r.data["image/png"]) == (150, 100) and r.png is r.data["image/png"]
        assert [png_size(f) for f in r.figures] == [(30, 30)]
        assert set(r.data) == {"text/plain", "image/png"}


def test_llm_sandbox_session_plots():
    with ArtifactSandboxSession(lang="python", image=MPL, enable_plotting=True) as s:
        r = s.run(DRAW, timeout=120)
        assert r.exit_code == 0 and r.stdout == "drawn\n", r.stderr
        assert [p.format.value for p in r.plots] == ["png", "png"]
        # Saved as llm-sandbox saves them: 100 dpi, the bounding box tight,
        # so the 4x3-inch figure is wider than high and the 2x2-inch one about square.
        (w1, h1), (w2, h2) = [png_size(base64.b64decode(p.content_base64)) for p in r.plots]
        assert 300 <= w1 <= 420 and 220 <= h1 <= 320 and w1 > h1, (w1, h1)
        assert 150 <= w2 <= 230 and 150 <= h2 <= 230, (w2, h2)
        # As llm-sandbox's, a session's plots stay until cleared.
        r = s.run("print('no figure')")
        assert r.stdout == "no figure\n" and len(r.plots) == 2
        r = s.run("print('no figure')", clear_plots=True)
        assert r.stdout == "no figure\n" and r.plots == []

#!/usr/bin/python3
"""Renders report.html in headless Chromium and prints what the page shows
once its script ran: the title, the summary's cells, one line per task row,
the text of the viewer opened on task TASK_ID (report.html#TASK_ID) and its
images.  Also takes a screenshot of that view into SHOT.png.

    render-report.py REPORT.html TASK_ID SHOT.png

The DOM comes from `chromium --headless --dump-dom`: the HTML file itself
holds empty tables and the data as JSON, so every line printed here is what
the page's own code put on it."""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

page, task, shot = sys.argv[1:4]
browser = shutil.which("chromium") or shutil.which("chromium-browser")
url = "file://" + urllib.parse.quote(os.path.abspath(page)) + "#" + urllib.parse.quote(task)
profile = tempfile.mkdtemp(prefix="render-report.")
# The browser's own sandbox needs privileges a test user may lack; the page
# is ours and loads nothing (its Content-Security-Policy says so).
args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
        "--window-size=1200,1600", "--virtual-time-budget=5000"]
env = dict(os.environ, HOME=profile)
try:
    dom = subprocess.run(args + ["--dump-dom", url], capture_output=True, text=True, timeout=120, env=env).stdout
    subprocess.run(args + ["--screenshot=" + os.path.abspath(shot), url], capture_output=True, timeout=120, env=env)
finally:
    shutil.rmtree(profile, ignore_errors=True)


class Dom(html.parser.HTMLParser):
    """The text of each element with an id, the rows of each table, the
    <img> of the viewer."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.text, self.rows, self.images = [], {}, {}, []
        self.cell = None

    def ids(self):
        return [i for _, i in self.stack if i]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            if "viewer" in self.ids():
                self.images.append((a.get("alt"), (a.get("src") or "")[:40]))
            return
        if tag in ("meta", "br", "hr", "input", "link"):
            return
        self.stack.append((tag, a.get("id")))
        table = next((i for t, i in reversed(self.stack) if t == "table" and i), None)
        if tag == "tr" and table:
            self.rows.setdefault(table, []).append([])
        elif tag in ("td", "th") and table and self.rows.get(table):
            self.rows[table][-1].append("")
            self.cell = table

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        for i in self.ids():
            self.text[i] = self.text.get(i, "") + data
        if self.cell:
            self.rows[self.cell][-1][-1] += data


d = Dom()
d.feed(dom)
print("title: " + d.text.get("title", ""))
for r in d.rows.get("summary", []):
    print("summary: " + " | ".join(r))
for r in d.rows.get("tasks", [])[1:]:
    print("task: " + " | ".join(r))
print("viewer: " + json.dumps(d.text.get("viewer", ""), ensure_ascii=False))
for alt, src in d.images:
    print("image: %s %s" % (alt, src))

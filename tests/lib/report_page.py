#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""report.html in headless Chromium, for the tests of hutch's reports.

As a program:

    report_page.py dom PAGE [FRAGMENT]        the DOM once the page's script ran
    report_page.py dom-nojs PAGE [FRAGMENT]   the DOM of the page without its script
    report_page.py shot PAGE WIDTH OUT.png [FRAGMENT [HEIGHT]]
                                              a screenshot WIDTH pixels wide
                                              (and HEIGHT high, 1600)

The DOM comes from `chromium --headless --dump-dom`, which needs script
(Chromium serializes the DOM with it), so "without its script" is the page
with its script elements removed, loaded as a sibling file: what a browser
with JavaScript off shows.

As a module (PYTHONPATH=tests/lib): parse(text) gives a Node tree with
by_id(), find_all(tag, cls) and text(), for assertions on a dumped DOM."""
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse


def chromium(args, page, fragment="", timeout=120):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    url = "file://" + urllib.parse.quote(os.path.abspath(page)) + (("#" + fragment) if fragment else "")
    profile = tempfile.mkdtemp(prefix="report-page.")
    # The browser's own sandbox needs privileges a test user may lack; the
    # page loads nothing (its Content-Security-Policy says so).
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
           "--virtual-time-budget=5000"] + args + [url]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, HOME=profile)).stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def without_script(page):
    """A copy of page beside it with no <script> element."""
    text = open(page, encoding="utf-8").read()
    stripped = re.sub(r"<script\b.*?</script\s*>", "", text, flags=re.S | re.I)
    out = os.path.join(os.path.dirname(os.path.abspath(page)), ".nojs-" + os.path.basename(page))
    with open(out, "w", encoding="utf-8") as f:
        f.write(stripped)
    return out


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def walk(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.walk()

    def find_all(self, tag=None, cls=None):
        return [n for n in self.walk() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes())]

    def find(self, tag=None, cls=None):
        found = self.find_all(tag, cls)
        return found[0] if found else None

    def by_id(self, ident):
        return next((n for n in self.walk() if n.attrs.get("id") == ident), None)

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(text):
    p = _Parser()
    p.feed(text)
    return p.root


def main(argv):
    what, page = argv[1], argv[2]
    if what == "dom":
        sys.stdout.write(chromium(["--dump-dom"], page, argv[3] if len(argv) > 3 else ""))
    elif what == "dom-nojs":
        copy = without_script(page)
        try:
            sys.stdout.write(chromium(["--dump-dom"], copy, argv[3] if len(argv) > 3 else ""))
        finally:
            os.unlink(copy)
    elif what == "shot":
        width, out = int(argv[3]), os.path.abspath(argv[4])
        height = int(argv[6]) if len(argv) > 6 else 1600
        chromium(["--window-size=%d,%d" % (width, height), "--screenshot=" + out, "--hide-scrollbars"], page,
                 argv[5] if len(argv) > 5 else "")
    else:
        sys.exit("usage: report_page.py dom|dom-nojs PAGE [FRAGMENT] | shot PAGE WIDTH OUT.png")


if __name__ == "__main__":
    main(sys.argv)

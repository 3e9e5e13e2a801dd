#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""report.html in headless Chromium, for the tests of hutch's reports.

As a program:

    report_page.py dom PAGE [FRAGMENT]        the DOM once the page's script ran
    report_page.py dom-nojs PAGE [FRAGMENT]   the DOM of the page without its script
    report_page.py shot PAGE WIDTH OUT.png [FRAGMENT [HEIGHT]]
                                              a screenshot WIDTH pixels wide
                                              (and HEIGHT high, 1600)
    report_page.py serve                      the same requests, any number, to
                                              one browser: each is a line with
                                              the count of its fields, then the
                                              fields (OUT, the file for the DOM,
                                              then the arguments above), each
                                              ended by a NUL; each answer is a
                                              line, "ok" or the error

The DOM comes from `chromium --headless --dump-dom`, which needs script
(Chromium serializes the DOM with it), so "without its script" is the page
with its script elements removed, loaded as a sibling file: what a browser
with JavaScript off shows.

A browser's start costs seconds of CPU, more than loading a page: serve
keeps one Chromium for a whole test and drives it over the DevTools
protocol (--remote-debugging-pipe), a new tab for each request, and
takes the DOM and the screenshot as --dump-dom and --screenshot do: the
document's serialization once its load event fired (the page sets no
timers, which --virtual-time-budget would run), a PNG of the viewport.

As a module (PYTHONPATH=tests/lib): parse(text) gives a Node tree with
by_id(), find_all(tag, cls) and text(), for assertions on a dumped DOM."""
import base64
import fcntl
import html.parser
import json
import os
import select
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse


def chromium(args, page, fragment="", timeout=120):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    url = page_url(page, fragment)
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


class Browser:
    """One headless Chromium, driven over --remote-debugging-pipe."""

    def __init__(self, timeout=120):
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        self.profile = tempfile.mkdtemp(prefix="report-page.")
        self.timeout = timeout
        to_browser, self.cmd_fd = os.pipe()
        self.resp_fd, from_browser = os.pipe()
        # Above 4, so that moving them to 3 and 4 in the child cannot
        # overwrite one with the other.
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_browser, from_browser)]
        os.close(to_browser)
        os.close(from_browser)

        def fds():  # the protocol's pipe: the browser reads fd 3, writes fd 4
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + self.profile,
               "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4),
                                     env=dict(os.environ, HOME=self.profile))
        for fd in ends:
            os.close(fd)
        self.buf, self.next_id, self.events = b"", 0, []

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.cmd_fd)
        os.close(self.resp_fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.resp_fd], [], [], left)[0]:
                raise RuntimeError("the browser did not answer within %d s" % self.timeout)
            chunk = os.read(self.resp_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser ended")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_fd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method, session):
        deadline = time.monotonic() + self.timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method and m.get("sessionId") == session:
                    del self.events[i]
                    return m
            self.events.append(self._message(deadline))

    def load(self, page, fragment, width=None, height=None):
        """A new tab with PAGE#FRAGMENT loaded: (target, session)."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session)
        if width:
            self.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
            self.call("Emulation.setScrollbarsHidden", session, hidden=True)
        self.events = [m for m in self.events if m.get("sessionId") != session]
        self.call("Page.navigate", session, url=page_url(page, fragment))
        self.wait_event("Page.loadEventFired", session)
        return target, session

    def dom(self, page, fragment=""):
        target, session = self.load(page, fragment)
        try:
            # What --dump-dom prints: the doctype on a line, then the document.
            r = self.call("Runtime.evaluate", session, returnByValue=True, expression=(
                "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')"
                " + document.documentElement.outerHTML + '\\n'"))
            return r["result"]["value"]
        finally:
            self.call("Target.closeTarget", targetId=target)

    def shot(self, page, width, height, out, fragment=""):
        target, session = self.load(page, fragment, width, height)
        try:
            data = self.call("Page.captureScreenshot", session, format="png")["data"]
            with open(out, "wb") as f:
                f.write(base64.b64decode(data))
        finally:
            self.call("Target.closeTarget", targetId=target)


def page_url(page, fragment=""):
    return "file://" + urllib.parse.quote(os.path.abspath(page)) + (("#" + fragment) if fragment else "")


def serve():
    """Requests on stdin (see the module's doc), one browser for them all."""
    browser = Browser()
    inp = sys.stdin.buffer
    try:
        while True:
            count = inp.readline()
            if not count:
                return
            fields = []
            for _ in range(int(count)):
                f = bytearray()
                while True:
                    c = inp.read(1)
                    if c in (b"", b"\0"):
                        break
                    f += c
                fields.append(f.decode("utf-8", "surrogateescape"))
            try:
                request(browser, fields[0], fields[1:])
                answer = "ok"
            except Exception as e:
                answer = "error: %s" % e
            sys.stdout.write(answer.replace("\n", " ") + "\n")
            sys.stdout.flush()
    finally:
        browser.close()


def request(browser, out, argv):
    what, page = argv[0], argv[1]
    fragment = argv[2] if len(argv) > 2 else ""
    if what == "dom":
        with open(out, "w", encoding="utf-8") as f:
            f.write(browser.dom(page, fragment))
    elif what == "dom-nojs":
        copy = without_script(page)
        try:
            with open(out, "w", encoding="utf-8") as f:
                f.write(browser.dom(copy, fragment))
        finally:
            os.unlink(copy)
    elif what == "shot":
        height = int(argv[5]) if len(argv) > 5 else 1600
        browser.shot(page, int(argv[2]), height, os.path.abspath(argv[3]), argv[4] if len(argv) > 4 else "")
    else:
        raise ValueError("unknown request %r" % what)


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
    if argv[1:] == ["serve"]:
        serve()
        return
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
        sys.exit("usage: report_page.py dom|dom-nojs PAGE [FRAGMENT] | shot PAGE WIDTH OUT.png | serve")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An OpenAI-compatible chat completions server that plays a script.

Installed as hutch-mock-llm (hutch-mock-llm(1)), the scripted model of
hutch's offline demo; the test suite runs it from its source tree.

Usage: hutch-mock-llm [--port N] [--port-file FILE] [--requests FILE] SCRIPT.json
       mock-openai.py SCRIPT.json PORTFILE REQUESTS.jsonl   (the tests' form)

Listens on 127.0.0.1 on port N (default: one the kernel picks; the tests'
form: $MOCK_PORT, else one picked), writes the port to FILE, answers
each POST .../chat/completions with the next entry of the script and
appends every request (path, Authorization header, body) to
REQUESTS.jsonl.  When the script is spent it answers with a submit call.
The first form prints the base URL (http://127.0.0.1:PORT/v1) on
standard output once it listens, and records requests only with
--requests.
Script entries:

  {"calls": [["execute_bash", {"command": "ls"}], ...], "content": "...",
   "reasoning": "..."}          a reply with native tool calls
  {"content": "text"}           a reply without tool calls
  {"status": 429, "retry_after": "1", "error": "slow down"}
  {"status": 500}               an error status with a JSON error body
  {"context_error": true}       400 "maximum context length" (vLLM wording)
  {"raw": "<html>..."}          these bytes as the body, status 200
  {"raw_hex": "fffe"}           these bytes (hex) as the body
  {"hang": 30}                  sleep that long before answering
  {"huge": 50000000}            a 200 body of that many bytes
  {"repeat": N, ...}            the same entry N times
  {"no_usage": true, ...}       a reply without "usage" (as some servers send)
  {"usage": {...}, ...}         this "usage" instead of 100 prompt and 10
                                completion tokens (e.g. with OpenRouter's "cost")

For runs in parallel (hutch benchmark), the script may instead be an object
{"tasks": [{"match": "TEXT", "steps": [entries]}, ...]}: a request plays the
steps of the first task whose TEXT is in its first user message, the entry
at the number of assistant messages it already holds (no shared order).
Its "first": [entries] are played, in order, to the first requests of all
(e.g. {"status": 429} to whichever worker asks first).

Each request's record also holds "inflight": the requests being answered
when it arrived, itself included.

GET .../models (hutch benchmark's pre-flight) is answered as vLLM answers
it, apart from the script: {"object": "list", "data": [{"id": NAME, ...}]}
for each NAME of --model (mock by default), in the tests' form of
$MOCK_MODELS (comma-separated; none by default), or with
the status $MOCK_MODELS_STATUS (e.g. 404, a server without the route).
With $MOCK_API_KEY, a GET without "Authorization: Bearer $MOCK_API_KEY"
gets 401 as vLLM's --api-key answers it.  Each GET is recorded in
REQUESTS.jsonl.get, not in REQUESTS.jsonl.  $MOCK_PORT: the port to listen
on (a server that comes up where a client already waits).
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args(argv):
    # The tests' form: three words, no option.
    if len(argv) == 3 and not any(a.startswith("-") for a in argv):
        models = [m for m in os.environ.get("MOCK_MODELS", "").split(",") if m]
        return argv[0], argv[1], argv[2], int(os.environ.get("MOCK_PORT") or 0), models, False
    p = argparse.ArgumentParser(
        prog="hutch-mock-llm",
        description="An OpenAI-compatible chat completions server on 127.0.0.1 that plays a scripted model "
                    "(hutch-mock-llm(1)): the offline demo of hutch benchmark.")
    p.add_argument("script", metavar="SCRIPT.json", help="the replies to play (a list, or {\"tasks\": [...]})")
    p.add_argument("--port", type=int, default=0, help="the port to listen on (default: any free one)")
    p.add_argument("--port-file", metavar="FILE", help="write the port to FILE once listening")
    p.add_argument("--requests", metavar="FILE", help="append every request to FILE (JSON lines)")
    p.add_argument("--model", metavar="NAME", action="append",
                   help="a model GET /v1/models lists (repeatable; default: mock)")
    a = p.parse_args(argv)
    if not 0 <= a.port <= 65535:
        p.error("--port wants 0 to 65535")
    return a.script, a.port_file, a.requests, a.port, a.model or ["mock"], True


script_path, port_file, requests_path, listen_port, served_models, announce = parse_args(sys.argv[1:])


def expand(items):
    out = []
    for item in items:
        out.extend([item] * int(item.get("repeat", 1)))
    return out


try:
    with open(script_path) as f:
        loaded = json.load(f)
except (OSError, ValueError) as e:
    sys.exit("hutch-mock-llm: %s: %s" % (script_path, e))
tasks = None
if isinstance(loaded, dict):
    tasks = [(t["match"], expand(t["steps"])) for t in loaded["tasks"]]
    script = expand(loaded.get("first", []))
else:
    script = expand(loaded)


def task_entry(body):
    msgs = body.get("messages") or []
    first = next((m.get("content") or "" for m in msgs if m.get("role") == "user"), "")
    if not isinstance(first, str):
        first = json.dumps(first)
    done = sum(1 for m in msgs if m.get("role") == "assistant")
    for match, steps in tasks:
        if match in first:
            return steps[done] if done < len(steps) else None
    return None
lock = threading.Lock()
state = {"next": 0, "inflight": 0}


def completion(entry, n):
    msg = {"role": "assistant", "content": entry.get("content")}
    if "reasoning" in entry:
        msg["reasoning_content"] = entry["reasoning"]
    calls = entry.get("calls")
    if calls:
        msg["tool_calls"] = [
            {"id": "call_%d_%d" % (n, i), "type": "function",
             "function": {"name": c[0], "arguments": c[1] if isinstance(c[1], str) else json.dumps(c[1])}}
            for i, c in enumerate(calls)]
    reply = {"id": "cmpl-%d" % n, "object": "chat.completion", "model": "mock",
             "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
             "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
    if "usage" in entry:
        reply["usage"] = entry["usage"]
    if entry.get("no_usage"):
        del reply["usage"]
    return reply


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes: without this, delayed ACKs
    # add 40 ms to every reply.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        with lock:
            if requests_path:
                with open(requests_path + ".get", "a") as f:
                    f.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                        "time": time.time()}) + "\n")
        key = os.environ.get("MOCK_API_KEY")
        status = int(os.environ.get("MOCK_MODELS_STATUS") or 200)
        if key and self.headers.get("Authorization") != "Bearer " + key:
            self.send(401, json.dumps({"error": "Unauthorized"}).encode())
        elif not self.path.split("?")[0].endswith("/models"):
            self.send(404, json.dumps({"detail": "Not Found"}).encode())
        elif status != 200:
            self.send(status, json.dumps({"error": {"message": "scripted failure of /models"}}).encode())
        else:
            names = served_models
            self.send(200, json.dumps({"object": "list", "data": [
                {"id": m, "object": "model", "created": int(time.time()), "owned_by": "vllm", "root": m,
                 "parent": None, "max_model_len": 32768} for m in names]}).encode())

    def do_POST(self):
        self.counted = True
        try:
            self.answer()
        finally:
            self.done()

    def done(self):
        # Before the reply leaves: a client that has it is no longer counted.
        with lock:
            if self.counted:
                state["inflight"] -= 1
                self.counted = False

    def answer(self):
        with lock:
            state["inflight"] += 1
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        with lock:
            n = state["next"]
            state["next"] += 1
            if requests_path:
                with open(requests_path, "a") as f:
                    rec = {"path": self.path, "authorization": self.headers.get("Authorization"),
                           "time": time.time(), "inflight": state["inflight"], "body": json.loads(raw)}
                    f.write(json.dumps(rec) + "\n")
        if tasks is not None and n < len(script):
            entry = script[n]
        elif tasks is not None:
            entry = task_entry(json.loads(raw)) or {"calls": [["submit", {}]]}
        else:
            entry = script[n] if n < len(script) else {"calls": [["submit", {}]]}
        if "hang" in entry:
            time.sleep(float(entry["hang"]))
        self.done()
        if "huge" in entry:
            self.send(200, b"{\"x\": \"" + b"a" * int(entry["huge"]) + b"\"}")
        elif "raw" in entry:
            self.send(200, entry["raw"].encode())
        elif "raw_hex" in entry:
            self.send(200, bytes.fromhex(entry["raw_hex"]))
        elif entry.get("context_error"):
            self.send(400, json.dumps({"error": {"message": "This model's maximum context length is 32768 tokens. "
                                                 "However, you requested 65536 output tokens and your prompt "
                                                 "contains at least 1000 input tokens."}}).encode())
        elif "status" in entry:
            headers = {}
            if "retry_after" in entry:
                headers["Retry-After"] = str(entry["retry_after"])
            self.send(int(entry["status"]),
                      json.dumps({"error": {"message": entry.get("error", "scripted failure")}}).encode(), headers)
        else:
            self.send(200, json.dumps(completion(entry, n)).encode())


server = ThreadingHTTPServer(("127.0.0.1", listen_port), Handler)
server.daemon_threads = True
if port_file:
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
if announce:
    print("http://127.0.0.1:%d/v1" % server.server_address[1], flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    pass

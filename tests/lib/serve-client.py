#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small client of SandboxFusion's /run_code API, for hutch serve's tests
(tests/integration/serve.sh), written from the API's shape, with the
standard library only.

  serve-client.py run URL [KEY=VALUE...]   one request; prints the HTTP status
        and the answer's JSON on one line.  KEY=VALUE sets a request field:
        code=..., language=..., stdin=..., run_timeout=5, memory_limit_MB=64,
        file:PATH=TEXT (a file in, base64'd here), fetch=PATH (repeatable),
        token=T (Authorization: Bearer T), basic=T (T as a Basic password),
        source=ADDR (connect from that local address, such as 127.0.0.2)
  serve-client.py burst URL N CODE [SECONDS]  N requests at once, each
        running CODE (python) with that run_timeout; prints a JSON object
        counting the HTTP statuses and the answers' statuses, and the
        seconds each request took (sorted).
  serve-client.py flood URL THREADS CODE STOPFILE [KEY=VALUE...]  THREADS
        threads send CODE (python) back to back, a refused one again after
        250 ms (verl's client waits a second, then more), until STOPFILE
        exists; then prints as JSON the HTTP statuses counted and the
        median seconds of the answered ones.  KEY=VALUE as for run
        (token=, source=).
  serve-client.py bench URL CONCURRENCY SECONDS CODE [LANGUAGE]  requests
        back to back from CONCURRENCY threads for SECONDS; prints requests
        per second and latency percentiles as JSON.
"""
import base64
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse


def post(url, payload, headers=None, timeout=120, source=None):
    """(status, parsed JSON or text) of one POST of payload (a dict, or
    bytes sent as they are)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    h.update(headers or {})
    try:
        conn.request("POST", u.path or "/", body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data.decode("utf-8", "replace")


def request_of(args):
    rq = {"language": "python", "files": {}, "fetch_files": []}
    headers = {}
    source = None
    for a in args:
        key, _, value = a.partition("=")
        if key.startswith("file:"):
            rq["files"][key[5:]] = base64.b64encode(value.encode()).decode()
        elif key == "fetch":
            rq["fetch_files"].append(value)
        elif key == "token":
            headers["Authorization"] = "Bearer " + value
        elif key == "source":
            source = value
        elif key == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(("hutch:" + value).encode()).decode()
        elif key in ("run_timeout", "compile_timeout"):
            rq[key] = float(value)
        elif key == "memory_limit_MB":
            rq[key] = int(value)
        elif key == "stdin" and value == "None":
            rq[key] = None
        else:
            rq[key] = value
    return rq, headers, source


def burst(url, n, code, seconds):
    results = [None] * n
    took = [0.0] * n

    def one(i):
        t0 = time.monotonic()
        try:
            results[i] = post(url, {"code": code, "language": "python", "run_timeout": seconds})
        except OSError as e:
            results[i] = (0, str(e))
        took[i] = time.monotonic() - t0

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    http_counts, statuses = {}, {}
    for status, body in results:
        http_counts[str(status)] = http_counts.get(str(status), 0) + 1
        s = body.get("status") if isinstance(body, dict) else None
        if s:
            statuses[s] = statuses.get(s, 0) + 1
    return {"http": http_counts, "status": statuses, "seconds": sorted(round(t, 3) for t in took)}


def flood(url, threads, code, stopfile, args):
    rq, headers, source = request_of(["code=" + code] + args)
    counts, answered = {}, []
    lock = threading.Lock()

    def loop():
        while not os.path.exists(stopfile):
            t0 = time.monotonic()
            try:
                status, _ = post(url, rq, headers, source=source)
            except OSError:
                status = 0
            with lock:
                counts[str(status)] = counts.get(str(status), 0) + 1
                if status == 200:
                    answered.append(time.monotonic() - t0)
            if status != 200:
                time.sleep(0.25)

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    answered.sort()
    return {"http": counts, "median": round(answered[len(answered) // 2], 2) if answered else None}


def bench(url, concurrency, seconds, code, language):
    lat, errors = [], []
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def loop():
        while time.monotonic() < end:
            t0 = time.monotonic()
            status, body = post(url, {"code": code, "language": language})
            t = time.monotonic() - t0
            with lock:
                if status == 200 and isinstance(body, dict) and body.get("status") == "Success":
                    lat.append(t)
                else:
                    errors.append(status)

    t0 = time.monotonic()
    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat.sort()

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1000, 1) if lat else None

    return {"concurrency": concurrency, "requests": len(lat), "errors": len(errors),
            "rps": round(len(lat) / wall, 1), "p50_ms": pct(50), "p99_ms": pct(99)}


def main(argv):
    if len(argv) >= 2 and argv[0] == "run":
        rq, headers, source = request_of(argv[2:])
        status, body = post(argv[1], rq, headers, source=source)
        print(status, json.dumps(body))
    elif len(argv) >= 5 and argv[0] == "flood":
        print(json.dumps(flood(argv[1], int(argv[2]), argv[3], argv[4], argv[5:])))
    elif len(argv) >= 4 and argv[0] == "burst":
        print(json.dumps(burst(argv[1], int(argv[2]), argv[3], float(argv[4]) if len(argv) > 4 else 10)))
    elif len(argv) >= 5 and argv[0] == "bench":
        lang = argv[5] if len(argv) > 5 else "python"
        print(json.dumps(bench(argv[1], int(argv[2]), float(argv[3]), argv[4], lang)))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

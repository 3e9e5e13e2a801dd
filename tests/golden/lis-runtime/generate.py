#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes what LLM-in-Sandbox 0.2.0's DockerRuntime returns for a set of
commands, for hutch.compat.llm_in_sandbox's tests.

Usage: generate.py LIS_CHECKOUT [OUTFILE]

LIS_CHECKOUT is a checkout of github.com/llm-in-sandbox/llm-in-sandbox at
tag v0.2.0 (the directory holding llm_in_sandbox/); OUTFILE defaults to
cases.json beside this script.  LIS's docker_runtime.py is imported
unchanged and its run, demux_run, copy_dir_to_container, copy_to_container,
copy_from_container and setup_env do their own work; the container is the
stand-in of ../lis/generate.py (docker's exec_run as a bwrap'd process in a
root of the host's /usr and /etc, /testbed and /root scratch directories,
stdout and stderr together or apart), given docker's put_archive and
get_archive here.  See README.
"""
import io
import json
import logging
import os
import shutil
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lis"))
import generate as lis_golden  # noqa: E402  (stubs litellm, rich, docker; the Container)


class Container(lis_golden.Container):
    """The stand-in with docker's archive calls, on the bound directories."""

    def _host(self, path):
        path = os.path.normpath(path)
        for top in ("/testbed", "/root"):
            if path == top or path.startswith(top + "/"):
                return os.path.join(self.state, path[1:])
        raise ValueError(f"{path}: not under a bound directory of the stand-in")

    def put_archive(self, path, data):
        with tarfile.open(fileobj=data, mode="r") as tar:
            tar.extractall(self._host(path), filter="tar")
        return True

    def get_archive(self, path):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(self._host(path), arcname=os.path.basename(path.rstrip("/")))
        return [buf.getvalue()], {}


# ---- the cases: [method, args, kwargs] ----
R, D = "run", "demux_run"
CASES = [
    [R, ["echo hello"], {}],
    [D, ["echo hello"], {}],
    [R, ["printf 'out\\n'; printf 'err\\n' >&2; printf 'out2\\n'"], {}],
    [D, ["printf 'out\\n'; printf 'err\\n' >&2; printf 'out2\\n'"], {}],
    [R, ["echo a; exit 3"], {}],
    [D, ["echo a; echo b >&2; exit 3"], {}],
    [R, ["exit 124"], {}],
    [D, ["echo x; exit 124"], {}],
    [R, ["echo started; sleep 5"], {"timeout": 1}],
    [D, ["echo started; sleep 5"], {"timeout": 1}],
    [R, ["sleep 3; echo done"], {"timeout": 0.5}],
    [R, ["printf '\\033[31mred\\033[0m\\r\\nok\\r\\n'"], {}],
    [D, ["printf '\\033[1mb\\033[0m\\r\\n'; printf '\\033[31me\\r\\n' >&2"], {}],
    [R, ["printf 'a\\342\\202b\\377c\\303\\251\\n'"], {}],
    [D, ["printf '\\377' >&2"], {}],
    [R, ["kill -9 $$"], {}],
    [D, ["echo bye; kill -TERM $$"], {}],
    [R, ["no-such-command-x"], {}],
    [D, ["no-such-command-x"], {}],
    [R, ["pwd"], {}],
    [R, ["pwd"], {"workdir": "/tmp"}],
    [D, ["pwd; cd /; pwd"], {"workdir": "/testbed/input"}],
    [R, ["cd /tmp; export X=1"], {}],
    [R, ["pwd; echo ${X:-unset}"], {}],
    [R, ["echo $PATH; env | grep ^PIP_ | sort"], {}],
    [R, ["echo 'it'\"'\"'s'; echo \"$((6*7))\"; echo $'tab\\there'"], {}],
    [R, ["cat <<'EOF'\nline $1\n`not run`\nEOF"], {}],
    [R, ["cat"], {}],
    [R, ["seq 1 5000 | tail -n 3; seq 1 100000 | wc -l"], {}],
    [D, ["seq 1 30000"], {}],
    [R, [""], {}],
    [D, ["true"], {}],
    [R, ["ls -a /testbed"], {}],
    [R, ["git -C /testbed rev-parse --is-inside-work-tree"], {}],
    [R, ["mkdir -p sub && echo data > sub/f.txt && ls sub"], {}],
    [R, ["timeout 1 sleep 3"], {}],
    [R, ["sleep 3 & echo bg"], {"timeout": 5}],
    [R, ["echo x"], {"timeout": "abc"}],
    [R, ["echo x"], {"timeout": 0}],
]

# Host files copied in: (relative path, contents).
FILES = [("a.txt", "alpha\n"), ("d/b.txt", "beta\n"), ("d/e/c.py", "print('c')\n")]


def main():
    checkout = os.path.abspath(sys.argv[1])
    out = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(HERE, "cases.json")
    sys.path.insert(0, checkout)
    from llm_in_sandbox.docker_runtime import DockerRuntime

    state = tempfile.mkdtemp(prefix="lis-runtime-golden.")
    try:
        rt = DockerRuntime.__new__(DockerRuntime)  # no docker daemon: see Container
        rt.repo_path = "/testbed"
        rt.logger = logging.getLogger("golden")
        rt.container = Container(state)
        rt.setup_env()
        results = []
        for method, args, kwargs in CASES:
            got = getattr(rt, method)(*args, **kwargs)
            results.append({"method": method, "args": args, "kwargs": kwargs, "result": list(got)})
        # copy-in: a host directory's contents, one file, then what the sandbox sees.
        src = os.path.join(state, "host-src")
        for rel, text in FILES:
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "w") as f:
                f.write(text)
        rt.copy_dir_to_container(src, "/testbed/documents")
        rt.copy_to_container(os.path.join(src, "a.txt"), "/testbed/new/dir/a2.txt")
        listing = rt.run("find documents new -type f | sort; cat documents/d/e/c.py new/dir/a2.txt")
        # copy-out: a directory's contents land in the host directory.
        rt.run("mkdir -p output/o && echo answer > output/answer.txt && echo deep > output/o/x.txt")
        dst = os.path.join(state, "host-dst")
        rt.copy_from_container("/testbed/output", dst)
        copied = sorted(
            os.path.relpath(os.path.join(d, f), dst) + "=" + open(os.path.join(d, f)).read()
            for d, _, fs in os.walk(dst) for f in fs)
        doc = {
            "lis": "llm-in-sandbox v0.2.0 (bf93b89), llm_in_sandbox/docker_runtime.py",
            "setup": "DockerRuntime.setup_env(), then each case in order on the same container",
            "cases": results,
            "files": FILES,
            "copy_in": list(listing),
            "copy_out": copied,
        }
        with open(out, "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{len(results)} cases")
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()

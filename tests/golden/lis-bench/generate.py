#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes what LLM-in-Sandbox 0.2.0's benchmark runner writes for each task
set of tasks/, played by the scripted model of replies/: its results.json,
trajectory.json and logs/ID.txt, into out/NAME/.

Usage: generate.py LIS_CHECKOUT [OUTDIR] [IMAGE]

LIS_CHECKOUT holds llm_in_sandbox/ at tag v0.2.0.  OUTDIR defaults to the
directory of this script; IMAGE (the docker_image LIS records, which is the
name hutch's test gives --rootfs) to hutch-test-debian.  See README.

LIS's package is copied whole into a scratch directory, with this
directory's task folders put into its benchmark/ folder (where its runner
looks for them), and its own command, cli.run_benchmark, is called for each
task set with one worker, so that every byte of those files comes from its
code.  Only what shapes none of them is stood in for:
  litellm    the LLM client: each completion is the scripted reply the
             tests' mock server (tests/lib/mock-openai.py) gives the same
             request, as a response object of litellm's shape; an error
             status raises, as litellm does;
  docker     the container: commands LIS builds run under bubblewrap in a
             root of the host's /usr and /etc, /testbed and /root bound to
             scratch directories (as tests/golden/lis/generate.py does), and
             put_archive unpacks into them;
  datasets   the json loader: the rows of the data file, each with every
             column (a missing one is None, and a missing key of an object
             column too, as Arrow's table gives them);
  pydantic   the trajectory record's base class, only when absent;
  tqdm       the progress bar, only when absent.
rich is LIS's own dependency and shapes logs/ID.txt: it must be installed
(Debian's python3-rich).
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


# ---- litellm: the scripted model ----

class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Message:
    def __init__(self, content, calls):
        self.content = content
        self.tool_calls = calls
        self.provider_specific_fields = None

    def model_dump(self, exclude_none=False):
        d = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [{"id": c.id, "type": "function",
                                "function": {"name": c.function.name, "arguments": c.function.arguments}}
                               for c in self.tool_calls]
        return {k: v for k, v in d.items() if not (exclude_none and v is None)}


SCRIPT = {"tasks": []}
COUNT = [0]


class APIError(Exception):
    pass


def completion(model=None, messages=None, **kw):
    """The entry the mock server plays for this request (its task mode)."""
    n = COUNT[0]
    COUNT[0] += 1
    first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    done = sum(1 for m in messages if m.get("role") == "assistant")
    entry = None
    for t in SCRIPT["tasks"]:
        if t["match"] in first:
            entry = t["steps"][done] if done < len(t["steps"]) else None
            break
    entry = entry or {"calls": [["submit", {}]]}
    if "status" in entry:
        raise APIError("OpenAIException - Error code: %d - scripted failure" % entry["status"])
    calls = None
    if entry.get("calls"):
        calls = [Obj(id="call_%d_%d" % (n, i), type="function",
                     function=Obj(name=c[0], arguments=c[1] if isinstance(c[1], str) else json.dumps(c[1])))
                 for i, c in enumerate(entry["calls"])]
    return Obj(choices=[Obj(message=Message(entry.get("content"), calls))])


def token_counter(**kw):
    raise RuntimeError("no tokenizer")  # LIS then counts characters / 4


stub("litellm", drop_params=False, completion=completion, token_counter=token_counter)

# ---- docker: the container ----


class NotFound(Exception):
    pass


class ExecResult:
    def __init__(self, output, exit_code):
        self.output = output
        self.exit_code = exit_code


class Container:
    def __init__(self, state):
        self.state = state
        self.id = os.path.basename(state)
        self.status = "running"
        for d in ("testbed", "root"):
            os.makedirs(os.path.join(state, d), exist_ok=True)

    def host_path(self, path):
        path = os.path.normpath(path)
        if not (path == "/testbed" or path.startswith("/testbed/") or path.startswith("/root")):
            raise ValueError("the stand-in container holds only /testbed and /root: %s" % path)
        return os.path.join(self.state, path.lstrip("/"))

    def exec_run(self, cmd, workdir="/testbed", environment=None, demux=False):
        env = {"HOME": "/root", "LANG": "C.UTF-8"}  # the python:3.11-slim image's
        env.update(environment or {})
        argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for link in ("bin", "sbin", "lib", "lib64"):
            argv += ["--symlink", "usr/" + link, "/" + link]
        argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--bind", os.path.join(self.state, "testbed"), "/testbed",
                 "--bind", os.path.join(self.state, "root"), "/root",
                 "--unshare-net", "--die-with-parent", "--chdir", workdir, "--clearenv"]
        for k, v in env.items():
            argv += ["--setenv", k, v]
        argv += ["--"] + list(cmd)
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE if demux else subprocess.STDOUT)
        code = p.returncode if p.returncode >= 0 else 128 - p.returncode
        if demux:
            return ExecResult((p.stdout or None, p.stderr or None), code)
        return ExecResult(p.stdout, code)

    def put_archive(self, path, data):
        with tarfile.open(fileobj=data, mode="r") as tar:
            tar.extractall(self.host_path(path))
        return True

    def stop(self, timeout=None):
        self.status = "exited"

    def remove(self, force=False):
        shutil.rmtree(self.state, ignore_errors=True)


class Containers:
    def __init__(self, scratch):
        self.scratch = scratch

    def get(self, name):
        raise NotFound(name)

    def run(self, image, name=None, **kw):
        return Container(tempfile.mkdtemp(prefix="container.", dir=self.scratch))


class Images:
    def get(self, name):
        return Obj(id=name)


class Client:
    def __init__(self, scratch):
        self.containers = Containers(scratch)
        self.images = Images()


SCRATCH = tempfile.mkdtemp(prefix="lis-bench.")
stub("docker", from_env=lambda **kw: Client(SCRATCH),
     errors=types.SimpleNamespace(NotFound=NotFound, ImageNotFound=NotFound, APIError=Exception))

# ---- datasets: the json loader ----


def load_dataset(kind, data_files=None, split=None, **kw):
    assert kind == "json", kind
    with open(data_files) as f:
        text = f.read()
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    # Arrow's columns: every row has every column, and an object column
    # every key any row's object has.
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    subkeys = {}
    for c in cols:
        objs = [r[c] for r in rows if isinstance(r.get(c), dict)]
        if objs:
            subkeys[c] = []
            for o in objs:
                subkeys[c] += [k for k in o if k not in subkeys[c]]
    out = []
    for r in rows:
        row = {c: r.get(c) for c in cols}
        for c, keys in subkeys.items():
            if isinstance(row[c], dict):
                row[c] = {k: row[c].get(k) for k in keys}
        out.append(row)
    return out


stub("datasets", load_dataset=load_dataset)

try:
    import pydantic  # noqa: F401
except ImportError:
    class BaseModel:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    stub("pydantic", BaseModel=BaseModel, Field=lambda default=None, default_factory=None, **k: (
        default_factory() if default_factory else default))
try:
    import tqdm  # noqa: F401
except ImportError:
    class Bar:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            return lambda *a, **k: None

    stub("tqdm", tqdm=Bar)


def main():
    lis = os.path.abspath(sys.argv[1])
    outdir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else HERE
    image = sys.argv[3] if len(sys.argv) > 3 else "hutch-test-debian"
    import rich
    pkg = os.path.join(SCRATCH, "pkg")
    shutil.copytree(os.path.join(lis, "llm_in_sandbox"), os.path.join(pkg, "llm_in_sandbox"))
    bench = os.path.join(pkg, "llm_in_sandbox", "benchmark")
    for name in sorted(os.listdir(os.path.join(HERE, "tasks"))):
        shutil.rmtree(os.path.join(bench, name), ignore_errors=True)
        shutil.copytree(os.path.join(HERE, "tasks", name), os.path.join(bench, name))
    sys.path.insert(0, pkg)
    for var in ("LLM_NAME", "LLM_BASE_URL", "LLM_API_KEY", "LLM_TEMPERATURE", "LLM_NUM_WORKERS",
                "LLM_IN_SANDBOX_CONFIG"):
        os.environ.pop(var, None)
    os.chdir(SCRATCH)  # no settings file of LIS's in the current directory
    from llm_in_sandbox import cli
    for name in sorted(os.listdir(os.path.join(HERE, "tasks"))):
        with open(os.path.join(HERE, "replies", name + ".json")) as f:
            SCRIPT["tasks"] = json.load(f)["tasks"]
        runs = os.path.join(SCRATCH, "runs-" + name)
        cli.run_benchmark(task=name, llm_name="mock", docker_image=image, output_dir=runs,
                          llm_base_url="http://127.0.0.1:8000/v1", num_workers=1)
        (run,) = os.listdir(runs)
        dest = os.path.join(outdir, "out", name)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(os.path.join(dest, "logs"))
        for f in ("results.json", "trajectory.json"):
            shutil.copyfile(os.path.join(runs, run, f), os.path.join(dest, f))
        for f in sorted(os.listdir(os.path.join(runs, run, "logs"))):
            shutil.copyfile(os.path.join(runs, run, "logs", f), os.path.join(dest, "logs", f))
    shutil.rmtree(SCRATCH, ignore_errors=True)
    print("rich %s, python %s" % (getattr(rich, "__version__", "?"), sys.version.split()[0]), file=sys.stderr)


if __name__ == "__main__":
    main()

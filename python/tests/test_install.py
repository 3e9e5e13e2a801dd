# SPDX-License-Identifier: Apache-2.0
"""The package built and installed as users do, with no HUTCH_* variable
when it runs: pip in a virtual environment against an installed hutch
(make install into a staging directory, found by pkg-config), or from the
checkout with nothing installed; and the README's example as it is."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

import hutch

SRCDIR = os.environ.get("HUTCH_SRCDIR")
BUILDDIR = os.environ.get("HUTCH_BUILDDIR")
STORE = os.environ.get("HUTCH_STORE")
DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
needs_tree = pytest.mark.skipif(
    not (SRCDIR and BUILDDIR and STORE), reason="HUTCH_SRCDIR, HUTCH_BUILDDIR and HUTCH_STORE are not set"
)
# The rootless run reads a copy of the test files, not the build tree.
needs_build_tree = pytest.mark.skipif(
    not (BUILDDIR and os.access(os.path.join(BUILDDIR, "Makefile"), os.R_OK)),
    reason="no configured build tree here (the rootless run has a copy of the test files): built in the root run",
)

# Runs a sandbox from the package as it was installed and prints what it
# found: the runtime it linked, the policy it took, the command's output.
PROBE = r"""
import json, os, sys
import hutch
from hutch import _config, _paths
store, state, image = sys.argv[1:4]
with hutch.Sandbox(image, store=store, state_dir=state) as sb:
    r = sb.exec(["sh", "-c", "echo hello from $0", "sandbox"])
maps = open("/proc/self/maps").read()
print(json.dumps({
    "runtime": _config.RUNTIME,
    "policy": _paths.default_policy(),
    "stdout": r.stdout.decode(),
    "exit_code": r.exit_code,
    "shared": "/libhutch.so" in maps,
    "package": os.path.dirname(hutch.__file__),
}))
"""


def clean_env(**extra):
    """The caller's environment without hutch's variables, nor make's (a
    make under `make check` would take them for its parent's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUTCH_")}
    for k in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "PYTHONPATH", "PKG_CONFIG_PATH", "PKG_CONFIG_SYSROOT_DIR"):
        env.pop(k, None)
    env.update(extra)
    return env


def run(cmd, env, timeout=600, cwd=None):
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtual environment that sees the system's setuptools and wheel
    (Debian's), as the README sets one up."""
    d = tmp_path_factory.mktemp("venv")
    p = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(d)],
                       env=clean_env(), capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"{sys.executable} -m venv fails (apt-get install python3-venv): {p.stderr.strip()[-300:]}")
    py = str(d / "bin" / "python")
    p = subprocess.run([py, "-c", "import setuptools, wheel, pip"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"{sys.executable} lacks pip, setuptools or wheel (apt-get install python3-pip python3-setuptools "
                    f"python3-wheel): {p.stderr.strip()[-300:]}")
    return py


def package_copy(tmp_path):
    """python/ alone, away from the checkout: what a wheel is built from."""
    dst = tmp_path / "python"
    shutil.copytree(
        os.path.join(SRCDIR, "python"),
        dst,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so", ".pytest_cache"),
    )
    return str(dst)


def build_and_install(py, src, env, tmp_path):
    """pip wheel, then pip install of that wheel: a built wheel installs
    where there is no compiler."""
    env = dict(env, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    wheels = tmp_path / "wheels"
    run([py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(wheels), src], env)
    (whl,) = glob.glob(str(wheels / "hutch-*.whl"))
    run([py, "-m", "pip", "install", "--no-index", "--force-reinstall", "--no-deps", whl], env)


def probe(py, image, tmp_path):
    import json

    state = tmp_path / "state"
    state.mkdir()
    p = run([py, "-c", PROBE, STORE, str(state), image], clean_env(), timeout=300, cwd=str(tmp_path))
    return json.loads(p.stdout.strip().splitlines()[-1])


@needs_tree
@needs_build_tree
def test_pip_against_an_installed_hutch(venv, image, tmp_path):
    stage = tmp_path / "stage"
    run(["make", "-C", BUILDDIR, "install", f"DESTDIR={stage}"], clean_env(), timeout=900)
    pcs = glob.glob(str(stage / "**" / "pkgconfig" / "hutch.pc"), recursive=True)
    if not pcs:
        pytest.skip("make install installs no hutch.pc (this tree builds no libhutch.so and hutch.pc yet)")
    # hutch.pc names /usr/local (configure's prefix): the staging directory
    # is its sysroot, prefixed to every path pkg-config gives.
    pkg = dict(PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_SYSROOT_DIR=str(stage))
    p = subprocess.run(["pkg-config", "--exists", "hutch"], env=clean_env(**pkg))
    if p.returncode != 0:
        pytest.skip(f"pkg-config --exists hutch fails for {pcs[0]}")
    build_and_install(venv, package_copy(tmp_path), clean_env(**pkg), tmp_path)
    got = probe(venv, image, tmp_path)
    assert got["runtime"] == "installed" and got["shared"], got
    assert got["stdout"] == "hello from sandbox\n" and got["exit_code"] == 0, got
    assert got["package"].startswith(os.path.dirname(os.path.dirname(venv))), got
    # Its runtime was built for /usr/local: the policy is the staged one,
    # found through pkg-config's pkgdatadir, unless hutch is installed there.
    if not os.path.exists("/usr/local/share/hutch/policies/default.policy"):
        assert got["policy"] and got["policy"].startswith(str(stage)), got


@needs_tree
@needs_build_tree
def test_pip_from_the_checkout_with_nothing_installed(venv, image, tmp_path, monkeypatch):
    # HUTCH_BUILDDIR names the checkout's build tree (whatever pkg-config
    # finds): its runtime/libhutch_pic.a, made by its make.
    env = clean_env(HUTCH_BUILDDIR=BUILDDIR)
    build_and_install(venv, package_copy(tmp_path), env, tmp_path)
    got = probe(venv, image, tmp_path)
    assert got["runtime"] == "checkout" and not got["shared"], got
    assert got["stdout"] == "hello from sandbox\n" and got["exit_code"] == 0, got
    # Nothing installed where the runtime was configured to look: the
    # checkout's policy, with no variable naming it.
    monkeypatch.delenv("HUTCH_POLICY", raising=False)
    try:
        installed = hutch._hutch.default_policy_path()
    except hutch.NotFoundError:
        installed = None
    assert got["policy"] == (None if installed else os.path.join(SRCDIR, "policies", "default.policy")), got


def test_the_package_run_from_its_build_tree_takes_the_checkouts_policy(monkeypatch):
    if not hutch._paths.run_from_build_tree():
        pytest.skip("this package is not run from the build tree that built it")
    monkeypatch.delenv("HUTCH_POLICY", raising=False)
    want = os.path.join(hutch._config.SRCDIR, "policies", "default.policy")
    assert hutch._paths.default_policy() == want
    # $HUTCH_POLICY is left to the runtime, which reads it.
    monkeypatch.setenv("HUTCH_POLICY", "/elsewhere/my.policy")
    assert hutch._paths.default_policy() is None


def readme_example():
    with open(os.path.join(SRCDIR, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("\n## Python\n") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@needs_tree
@pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set (the example's interpreter needs python3)")
def test_the_readme_example_runs_as_it_is(tmp_path):
    # On any host, a usable cgroup or none (the policy's limits fall back
    # to rlimits), with no policy named: only the image is the test's.
    code = readme_example()
    assert 'hutch.Sandbox(image="default"' in code
    code = code.replace('image="default"', f"image={DEBIAN!r}, store={STORE!r}, state_dir={str(tmp_path)!r}")
    env = clean_env(PYTHONPATH=os.path.dirname(os.path.dirname(hutch.__file__)))
    if not hutch._paths.run_from_build_tree() and not os.access(hutch._config.SRCDIR or "/", os.R_OK | os.X_OK):
        # The rootless run's copy of the package, away from a checkout it
        # cannot read: the copy of the policy beside the test files.
        env["HUTCH_POLICY"] = os.path.join(SRCDIR, "policies", "default.policy")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "42\n", (p.stdout, p.stderr)

# SPDX-License-Identifier: Apache-2.0
"""run_code(libraries=...) installs with pip through the sandbox's proxy,
from a package index this test serves on the host's loopback (the name
pkgs.test mapped to it with resolve=), and says clearly when the proxy
refuses the index."""

import os
import subprocess
import sys

import pytest

import hutch
from hutch.compat.llm_sandbox import SandboxSession

from conftest import served
from test_code import DEBIAN, needs_debian

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_INDEX = os.path.join(HERE, "..", "..", "tests", "lib", "make-pip-index.py")
CODE = "import hutchdemo\nprint(hutchdemo.WORD)"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    www = tmp_path_factory.mktemp("www")
    subprocess.run([sys.executable, MAKE_INDEX, str(www / "simple")], check=True)
    with served(www) as srv:
        yield srv


def _opts(index, allow):
    port = index.server_address[1]
    env = {"PIP_INDEX_URL": f"http://pkgs.test:{port}/simple", "PIP_TRUSTED_HOST": "pkgs.test", "PIP_NO_CACHE_DIR": "1"}
    return dict(net="proxy", allow=allow, resolve=["pkgs.test=127.0.0.1"], env=env)


@needs_debian
def test_libraries_installed_through_the_proxy(index):
    port = index.server_address[1]
    del index.requests[:]
    with hutch.Sandbox(DEBIAN, **_opts(index, [f"pkgs.test:{port}"])) as sb:
        assert sb.run_code("import hutchdemo").exit_code == 1  # not there before
        r = sb.run_code(CODE, libraries=["hutchdemo"], timeout=120)
        assert r.ok and r.stdout == b"installed through the proxy\n", r.stderr
        # pip fetched it from this index, and installed it for good.
        assert "/simple/hutchdemo/hutchdemo-1.0-py3-none-any.whl" in index.requests
        assert sb.exec("python3 -m pip show hutchdemo").stdout.startswith(b"Name: hutchdemo\n")
        assert sb.run_code(CODE).stdout == b"installed through the proxy\n"


@needs_debian
def test_index_refused_by_the_allowlist(index):
    port = index.server_address[1]
    del index.requests[:]
    with hutch.Sandbox(DEBIAN, **_opts(index, ["pypi.org"])) as sb:
        with pytest.raises(hutch.LibraryError) as e:
            sb.run_code(CODE, libraries=["hutchdemo"], timeout=120)
        assert e.value.refused == [f"pkgs.test:{port}"]
        assert f"refused pkgs.test:{port}, not in its allowlist" in str(e.value)
        assert "allow=" in e.value.hint and e.value.result.exit_code != 0
        assert index.requests == []  # nothing reached the index
        assert sb.run_code("import hutchdemo").exit_code == 1


@needs_debian
def test_libraries_without_network(index):
    with hutch.Sandbox(DEBIAN) as sb:
        with pytest.raises(hutch.LibraryError) as e:
            sb.run_code(CODE, libraries=["hutchdemo"], timeout=120)
        assert "no network" in str(e.value) and 'net="proxy"' in e.value.hint


def _session_opts(index, allow):
    # llm-sandbox's spellings, and hutch's allowlist (allow=, resolve=) beside them.
    o = _opts(index, allow)
    return dict(
        runtime_configs={"environment": o["env"], "network_mode": "bridge"}, allow=o["allow"], resolve=o["resolve"]
    )


@needs_debian
def test_llm_sandbox_session_libraries(index, caplog):
    port = index.server_address[1]
    with SandboxSession(lang="python", image=DEBIAN, **_session_opts(index, [f"pkgs.test:{port}"])) as s:
        r = s.run(CODE, libraries=["hutchdemo"])
        assert r.exit_code == 0 and r.stdout == "installed through the proxy\n", r.stderr
    with SandboxSession(lang="python", image=DEBIAN, **_session_opts(index, ["pypi.org"])) as s:
        r = s.run(CODE, libraries=["hutchdemo"])
        # As llm-sandbox, run() goes on after a failed installation; the
        # failure is logged with the host the proxy refused.
        assert r.exit_code != 0 and "No module named 'hutchdemo'" in r.stderr
    assert f"installing hutchdemo failed: the sandbox's proxy refused pkgs.test:{port}" in caplog.text

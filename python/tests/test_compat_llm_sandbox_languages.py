# SPDX-License-Identifier: Apache-2.0
"""A language image built for real on first use: Ruby sessions of
hutch.compat.llm_sandbox on an image made from rootfs/llm-sandbox-ruby.recipe
(here on the Debian test image, from the mirror of its apt sources through
hutch's proxy), two sessions opened at once building it once, code run as
llm-sandbox runs Ruby, and libraries= installed with gem through the proxy
from a gem source this test serves on the host's loopback.

Minutes of apt: run by tests/integration/llm-sandbox-languages.sh, which
sets HUTCH_TEST_LANGUAGE_BUILD; skipped in the rest of the suite."""

import base64
import os
import threading

import pytest

import hutch
from hutch.compat.llm_sandbox import SandboxSession, _images
from hutch.compat.llm_sandbox.const import SupportedLanguage

from conftest import served
from test_code import DEBIAN

pytestmark = pytest.mark.skipif(
    not (DEBIAN and os.environ.get("HUTCH_TEST_LANGUAGE_BUILD")),
    reason="HUTCH_TEST_LANGUAGE_BUILD and HUTCH_TEST_DEBIAN_IMAGE are not set (llm-sandbox-languages.sh sets them)",
)

NAME = f"llm-sandbox-ruby-test-{os.getpid()}"
CODE = "require 'hutchdemo'\nputs HutchDemo::WORD"

# A one-gem source in the layout `gem generate_index` writes, made in the
# built image itself (its gem and ruby).
MAKE_SOURCE = r"""set -e
mkdir -p /tmp/g/lib /tmp/repo/gems && cd /tmp/g
printf 'module HutchDemo\n  WORD = "installed through the proxy"\nend\n' >lib/hutchdemo.rb
cat >hutchdemo.gemspec <<'G'
Gem::Specification.new do |s|
  s.name = "hutchdemo"
  s.version = "1.0.0"
  s.summary = "a gem served by a test"
  s.authors = ["hutch tests"]
  s.files = ["lib/hutchdemo.rb"]
  s.license = "Apache-2.0"
end
G
gem build hutchdemo.gemspec >/dev/null 2>&1
mv hutchdemo-1.0.0.gem /tmp/repo/gems/
gem generate_index -d /tmp/repo >/dev/null
"""


@pytest.fixture(scope="module")
def ruby_image():
    """The Ruby language mapped to an image of this test's, built on the
    Debian test image; removed afterwards."""
    mp = pytest.MonkeyPatch()
    mp.setitem(_images._BY_LANGUAGE, SupportedLanguage.RUBY, NAME)
    mp.setitem(_images.BUILDS, NAME, (DEBIAN, "llm-sandbox-ruby.recipe"))
    try:
        hutch.remove_image(NAME)
    except hutch.NotFoundError:
        pass
    yield NAME
    mp.undo()
    try:
        hutch.remove_image(NAME)
    except hutch.NotFoundError:
        pass


@pytest.fixture(scope="module")
def gem_source(ruby_image, tmp_path_factory):
    www = tmp_path_factory.mktemp("gems")
    with hutch.Sandbox(ruby_image) as sb:
        r = sb.exec(["/bin/sh", "-c", MAKE_SOURCE], timeout=120)
        assert r.exit_code == 0, r.stderr
        sb.download("/tmp/repo", str(www / "repo"))
    with served(www / "repo") as srv:
        yield srv


def test_first_sessions_build_the_image_once(ruby_image, caplog):
    caplog.set_level("WARNING", logger="hutch.compat.llm_sandbox")
    with pytest.raises(hutch.NotFoundError):
        hutch.image(ruby_image)
    out, errors = [], []

    def session():
        try:
            with SandboxSession(lang="ruby") as s:
                r = s.run("puts [1, 2, 3].sum\nputs ENV['GEM_HOME']")
                out.append((r.exit_code, r.stdout))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=session) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(1200)
    assert errors == []
    assert out == [(0, "6\n/tmp/gem_cache\n")] * 2
    assert hutch.image(ruby_image)["name"] == ruby_image
    assert caplog.text.count(f"image {ruby_image}: not in the store; building it once") == 1
    assert f"image {ruby_image}: step " in caplog.text  # the build's progress, step by step
    assert f"image {ruby_image}: built in" in caplog.text
    # The next session finds it: no build.
    caplog.clear()
    with SandboxSession(lang="ruby") as s:
        assert s.run("print 6 * 7").stdout == "42"
    assert "building" not in caplog.text


def _gem_session(gem_source, **kw):
    port = gem_source.server_address[1]
    return SandboxSession(lang="ruby", allow=[f"pkgs.test:{port}"], resolve=["pkgs.test=127.0.0.1"], **kw)


def _use_source(session, gem_source, tmp_path):
    rc = tmp_path / "gemrc"
    rc.write_text(f"---\n:sources:\n- http://pkgs.test:{gem_source.server_address[1]}/\n")
    session.copy_to_runtime(str(rc), "/etc/gemrc")


def test_libraries_installed_with_gem_through_the_proxy(ruby_image, gem_source, tmp_path):
    del gem_source.requests[:]
    with _gem_session(gem_source) as s:
        _use_source(s, gem_source, tmp_path)
        assert s.run(CODE).exit_code != 0  # not there before
        r = s.run(CODE, libraries=["hutchdemo"], timeout=300)
        assert (r.exit_code, r.stdout) == (0, "installed through the proxy\n"), r.stderr
        assert "/gems/hutchdemo-1.0.0.gem" in gem_source.requests  # fetched from this source
        assert "hutchdemo (1.0.0)" in s.execute_command("gem list hutchdemo").stdout
        assert s.run(CODE).stdout == "installed through the proxy\n"  # installed for the session


def test_libraries_without_network_reach_nothing(ruby_image, gem_source, tmp_path):
    del gem_source.requests[:]
    with SandboxSession(lang="ruby", runtime_configs={"network_mode": "none"}) as s:
        _use_source(s, gem_source, tmp_path)
        try:
            r = s.run(CODE, libraries=["hutchdemo"], timeout=300)
            assert r.exit_code != 0
        except Exception as e:  # llm-sandbox's install errors are its exceptions
            assert "hutchdemo" in str(e)
    assert gem_source.requests == []


def _npm_registry(www, port):
    """A one-package npm registry: hutchdemo's packument and its tarball."""
    import base64
    import hashlib
    import io
    import json
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in (
            ("package.json", '{"name": "hutchdemo", "version": "1.0.0", "main": "index.js"}'),
            ("index.js", 'module.exports = { WORD: "installed through the proxy" };'),
        ):
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    data = buf.getvalue()
    (www / "tarballs").mkdir()
    (www / "tarballs" / "hutchdemo-1.0.0.tgz").write_bytes(data)
    dist = {
        "tarball": f"http://pkgs.test:{port}/tarballs/hutchdemo-1.0.0.tgz",
        "shasum": hashlib.sha1(data).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
    }
    version = {"name": "hutchdemo", "version": "1.0.0", "main": "index.js", "dist": dist}
    (www / "hutchdemo").write_text(json.dumps({"name": "hutchdemo", "dist-tags": {"latest": "1.0.0"},
                                               "versions": {"1.0.0": version}}))


def test_javascript_libraries_installed_with_npm_through_the_proxy(tmp_path):
    """Where the JavaScript image is built (by hand or a first session: its
    npm is hundreds of the archive's packages, too long for CI to build)."""
    try:
        hutch.image("llm-sandbox-javascript")
    except hutch.NotFoundError:
        pytest.skip("the llm-sandbox-javascript image is not built")
    with served(tmp_path) as srv:
        port = srv.server_address[1]
        _npm_registry(tmp_path, port)
        env = {"npm_config_registry": f"http://pkgs.test:{port}/"}
        with SandboxSession(lang="javascript", allow=[f"pkgs.test:{port}"], resolve=["pkgs.test=127.0.0.1"],
                            runtime_configs={"environment": env}) as s:
            code = "console.log(require('hutchdemo').WORD)"
            assert s.run(code).exit_code != 0
            r = s.run(code, libraries=["hutchdemo"], timeout=300)
            assert (r.exit_code, r.stdout) == (0, "installed through the proxy\n"), r.stderr
        assert "/tarballs/hutchdemo-1.0.0.tgz" in srv.requests


def test_r_plots_captured_where_the_r_image_is_built():
    """ArtifactSandboxSession's R figures, base graphics and ggplot2, where
    the R image is built (by hand or a first session: too big for CI)."""
    from hutch.compat.llm_sandbox import ArtifactSandboxSession

    try:
        hutch.image("llm-sandbox-r")
    except hutch.NotFoundError:
        pytest.skip("the llm-sandbox-r image is not built")
    code = 'plot(1:10)\nlibrary(ggplot2)\nprint(ggplot(mtcars, aes(wt, mpg)) + geom_point())\ncat("drawn\\n")'
    with ArtifactSandboxSession(lang="r") as s:
        r = s.run(code)
        assert (r.exit_code, r.stdout) == (0, "drawn\n"), r.stderr  # the capture prints nothing of its own
        assert [p.format.value for p in r.plots] == ["png", "png"]
        assert all(base64.b64decode(p.content_base64).startswith(b"\x89PNG") for p in r.plots)
        s.clear_plots()
        assert s.run('cat("none\\n")').plots == []

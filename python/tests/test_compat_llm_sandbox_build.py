# SPDX-License-Identifier: Apache-2.0
"""compat.llm_sandbox's images made on first use (_build.py), with the
build stood in for by a script: one build however many sessions ask at
once, the base built before the image on it, the build's steps as progress
lines, a failed build's last lines and the command in the error, and the
hosts each language's libraries= reaches."""

import threading

import pytest

from hutch.compat.llm_sandbox import _build, _images
from hutch.compat.llm_sandbox.exceptions import ImageNotFoundError


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HUTCH_STORE", str(tmp_path / "store"))
    return tmp_path


def _fake_build(tmp_path, body):
    """A stand-in for `hutch`: called as SCRIPT rootfs build --from B --recipe R --name N."""
    script = tmp_path / "fake-hutch"
    script.write_text("#!/bin/sh\nname=$8\n" + body)
    script.chmod(0o755)
    return [str(script)]


def test_one_build_for_sessions_asking_at_once(store, caplog):
    built = store / "built"
    cmd = _fake_build(store, f'echo "hutch: step 1/1 (x.recipe:1): apt ruby"\nsleep 1\necho "$name" >>{built}\n')
    have = lambda name: built.exists() and name in built.read_text().split()  # noqa: E731
    errors = []

    def open_one():
        try:
            _build.ensure_built("lang-x", "default", "llm-sandbox-ruby.recipe", have, cmd)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert built.read_text().split() == ["lang-x"]  # built once, not three times
    assert "image lang-x: not in the store; building it once" in caplog.text
    assert "llm-sandbox-ruby.recipe on image default" in caplog.text
    assert "image lang-x: step 1/1 (x.recipe:1): apt ruby" in caplog.text
    assert "image lang-x: built in" in caplog.text
    # Already there: nothing runs.
    _build.ensure_built("lang-x", "default", "llm-sandbox-ruby.recipe", have, ["/nonexistent"])


def test_two_processes_share_the_lock(store):
    """The lock is the store's, held across processes: a build running in
    another process (flock held) is waited for, and its image reused."""
    import fcntl
    import os

    lock = _build._open_lock("lang-y")
    fcntl.flock(lock, fcntl.LOCK_EX)
    done = []
    t = threading.Thread(
        target=lambda: done.append(_build.ensure_built("lang-y", "b", "r", lambda n: True, ["/nonexistent"]))
    )
    t.start()
    t.join(0.5)
    assert t.is_alive()  # waits for the lock's holder
    os.close(lock)
    t.join(5)
    assert done == [None]  # found it built, ran nothing


def test_a_failed_build_says_why_and_how(store):
    cmd = _fake_build(store, 'echo "hutch: step 1/2 (x.recipe:1): apt nosuch"\necho "E: Unable to locate package nosuch"\nexit 1\n')
    with pytest.raises(ImageNotFoundError) as e:
        _build.ensure_built("lang-z", "default", "llm-sandbox-ruby.recipe", lambda n: False, cmd)
    text = str(e.value)
    assert "E: Unable to locate package nosuch" in text
    assert "exited 1" in text
    assert "--from default --recipe" in text and "--name lang-z" in text


def test_a_missing_recipe_is_named(store):
    with pytest.raises(ImageNotFoundError) as e:
        _build.recipe_path("llm-sandbox-nosuch.recipe")
    assert "llm-sandbox-nosuch.recipe" in str(e.value) and "HUTCH_ROOTFS_DIR" in str(e.value)


def test_every_language_has_its_recipe():
    for name, (base, recipe) in _images.BUILDS.items():
        assert _build.recipe_path(recipe).endswith("/rootfs/" + recipe)
        assert base == "ubuntu:24.04" if name == "default" else base == "default"


def test_an_image_is_built_on_its_base_first(monkeypatch):
    made = []
    have = {"default"}
    monkeypatch.setattr(_images, "_have", lambda n: n in have)

    def build(name, base, recipe, have_fn, command=None):
        made.append((name, base, recipe))
        have.add(name)

    monkeypatch.setattr(_images, "ensure_built", build)
    assert _images.hutch_image("ruby", None) == "llm-sandbox-ruby"
    assert made == [("llm-sandbox-ruby", "default", "llm-sandbox-ruby.recipe")]
    have.clear()
    del made[:]
    assert _images.hutch_image("javascript", None) == "llm-sandbox-javascript"
    assert made == [("default", "ubuntu:24.04", "agent.recipe"),
                    ("llm-sandbox-javascript", "default", "llm-sandbox-javascript.recipe")]


def test_registries_per_language(monkeypatch):
    monkeypatch.delenv("R_REPO", raising=False)
    assert _images.registries("javascript") == ["registry.npmjs.org"]
    assert _images.registries("ruby") == ["rubygems.org", "index.rubygems.org"]
    assert _images.registries("go") == ["proxy.golang.org", "sum.golang.org"]
    assert _images.registries("r") == ["cran.rstudio.com"]
    monkeypatch.setenv("R_REPO", "https://cloud.r-project.org/")
    assert _images.registries("r") == ["cloud.r-project.org"]
    assert _images.registries("python") == [] and _images.registries("java") == []


def test_a_session_reaches_its_registry_only_with_a_network():
    from hutch.compat.llm_sandbox import SandboxSession

    s = SandboxSession(lang="javascript")
    assert s._options["net"] == "proxy" and s._options["allow"] == ["registry.npmjs.org"]
    s = SandboxSession(lang="ruby", runtime_configs={"network_mode": "none"})
    assert s._options["net"] == "none" and "allow" not in s._options
    s = SandboxSession(lang="go", allow=["example.org"])
    assert s._options["allow"] == ["example.org", "proxy.golang.org", "sum.golang.org"]

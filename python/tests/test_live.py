# SPDX-License-Identifier: Apache-2.0
"""A live sandbox's name and labels, its status, pause and resume."""

import errno
import os
import time

import pytest

import hutch


def unique(base):
    return f"{base}-{os.getpid()}-{time.monotonic_ns() % 1000000}"


def ids(**filters):
    return {s["id"] for s in hutch.sandboxes(**filters)}


def test_name_and_labels(image):
    name = unique("py-named")
    with hutch.Sandbox(image, name=name, labels={"team": "a", "tier": "x"}) as sb, hutch.Sandbox(
        image, labels=["team=b"]
    ) as other:
        assert sb.name == name and sb.labels == {"team": "a", "tier": "x"}
        assert other.name is None and other.labels == {"team": "b"}
        assert name in repr(sb)
        st = sb.status()
        assert st["id"] == sb.id and st["name"] == name and st["labels"] == {"team": "a", "tier": "x"}
        assert st["state"] == "running" and st["pause_method"] is None
        # Filters, as hutch ps --filter: every one must match.
        assert ids(name=name) == {sb.id}
        assert sb.id in ids(labels={"team": "a"}) and other.id not in ids(labels={"team": "a"})
        assert {sb.id, other.id} <= ids(labels={"team": None})
        assert ids(labels={"team": "a", "tier": "y"}) & {sb.id, other.id} == set()
        assert sb.id in ids(filters=["label=tier=x"], status="running")
        assert sb.id not in ids(status="paused")
        # attach() takes the name; the handle reads name and labels back.
        h = hutch.Sandbox.attach(name)
        try:
            assert h.id == sb.id and h.name == name and h.labels == {"team": "a", "tier": "x"}
        finally:
            h.close()
        assert sb.exec("echo alive").stdout == b"alive\n"  # closing the attached handle left it running
    assert ids(name=name) == set()


def test_a_taken_name_is_refused_with_a_python_hint(image):
    name = unique("py-taken")
    with hutch.Sandbox(image, name=name) as sb:
        before = ids()
        with pytest.raises(hutch.ExistsError) as e:
            hutch.Sandbox(image, name=name)
        assert e.value.errno == errno.EEXIST and sb.id in e.value.message
        assert f'hutch.Sandbox.attach("{name}").destroy()' in e.value.hint, e.value.hint
        assert "hutch rm" not in str(e.value)
        assert ids() == before, "the refused create started nothing"
    # The name is free again once its sandbox is gone.
    with hutch.Sandbox(image, name=name) as again:
        assert again.name == name


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"name": "bad name"}, "invalid sandbox name"),
        ({"name": "0123456789ab"}, "could be a sandbox's id"),
        ({"labels": {"bad key!": "v"}}, "invalid label"),
        ({"labels": {"k": "v\x01"}}, "its value"),
    ],
)
def test_bad_names_and_labels(image, kwargs, words):
    before = ids()
    with pytest.raises(hutch.InvalidArgument) as e:
        hutch.Sandbox(image, **kwargs)
    assert words in e.value.message and e.value.hint, str(e.value)
    assert ids() == before


def test_labels_types(image):
    with pytest.raises(TypeError):
        hutch.Sandbox(image, labels="team=a")
    with pytest.raises(TypeError):
        hutch.Sandbox(image, labels={"n": 1})
    with pytest.raises(TypeError):
        hutch.Sandbox(image, name=5)
    with pytest.raises(hutch.InvalidArgument) as e:
        hutch.sandboxes(filters=["colour=red"])
    assert "invalid filter" in e.value.message


def counter(sb):
    return int(sb.read_file("/tmp/n").decode() or "0")


def wait_for(fn, seconds=10.0):
    end = time.monotonic() + seconds
    while not fn():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_pause_and_resume(made_by_cli):
    with hutch.Sandbox.attach(made_by_cli) as sb:
        sb.exec("i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.02; done >/dev/null 2>&1 &")
        wait_for(lambda: sb.exists("/tmp/n") and counter(sb) > 2)
        method = sb.pause()
        assert method in ("cgroup", "ptrace")
        assert sb.paused
        st = sb.status()
        assert st["state"] == "paused" and st["pause_method"] == method
        assert sb.id in ids(status="paused")
        frozen = counter(sb)
        time.sleep(0.5)
        assert counter(sb) == frozen, "nothing runs while paused"
        # Commands are refused, saying how to go on, in Python.
        with pytest.raises(hutch.PausedError) as e:
            sb.exec("true")
        assert e.value.errno == errno.EAGAIN and "is paused" in e.value.message
        assert f'hutch.Sandbox.resume("{sb.id}")' in e.value.hint and "hutch resume" not in str(e.value)
        with pytest.raises(hutch.PausedError):
            sb.spawn("true")
        with pytest.raises(hutch.Error) as e:
            sb.pause()
        assert e.value.errno == errno.EALREADY
        sb.resume()
        assert not sb.paused and sb.status()["state"] == "running"
        wait_for(lambda: counter(sb) > frozen)
        assert sb.exec("echo on").stdout == b"on\n"
        with pytest.raises(hutch.InvalidArgument):
            sb.resume()


def test_resume_on_the_class(made_by_cli):
    name = made_by_cli
    with hutch.Sandbox.attach(name) as sb:
        sb.pause()
        h = hutch.Sandbox.resume(name)
        try:
            assert isinstance(h, hutch.Sandbox) and h.id == sb.id and not h.paused and not h._h.owned
            assert h.exec("echo attached").stdout == b"attached\n"
        finally:
            h.close()
        assert sb.exec("echo still").stdout == b"still\n"  # closing the handle resumed left it running
        # By id too; a sandbox that is not paused is an error.
        with pytest.raises(hutch.InvalidArgument):
            hutch.Sandbox.resume(sb.id)
        sb.destroy()
    with pytest.raises(hutch.NotFoundError) as e:
        hutch.Sandbox.resume(name)
    assert "`hutch.sandboxes()`" in e.value.hint


def test_destroying_a_paused_sandbox(made_by_cli):
    sb = hutch.Sandbox.attach(made_by_cli)
    sb.exec("sleep 100 >/dev/null 2>&1 &")
    sb.pause()
    sid = sb.id
    sb.destroy()
    assert sid not in ids()


def test_pausing_a_sandbox_made_here(image):
    sb = hutch.Sandbox(image)
    sid = sb.id
    try:
        sb.exec("sleep 100 >/dev/null 2>&1 &")
        # A package built from a checkout gives its sandboxes the build
        # tree's hutch-init (_paths.use_build_tree_init): rootless too, its
        # init is no fork of Python, so ptrace can hold it.
        method = sb.pause()
        assert method in ("cgroup", "ptrace") and sb.paused
        with pytest.raises(hutch.PausedError):
            sb.exec("true")
    finally:
        sb.close()  # closing a paused sandbox made here removes it
    assert sid not in ids()

# SPDX-License-Identifier: Apache-2.0
"""A sandbox's time limit, published ports, devices and snapshots: a ttl
that runs out removes it; a port published is reached at sb.url() by a real
HTTP request, and a host port taken is refused to a second sandbox; a CDI
device of a synthetic spec and a plain /dev node reach the sandbox when
the policy allows devices, and its fork, and nothing else does; a
snapshot becomes an image another sandbox starts from."""

import json
import os
import socket
import time
import urllib.request

import pytest

import hutch


def gone(sid):
    return not any(s["id"] == sid for s in hutch.sandboxes())


def wait_for(fn, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if fn():
            return True
        time.sleep(0.1)
    return fn()


def test_ttl_expiry_removes_the_sandbox(image):
    s = hutch.Sandbox(image, ttl=1.5)
    try:
        assert s.status()["ttl"] == 1.5
        left = s.ttl_left
        assert 0 < left <= 1.5
        assert s.exec("true").ok
        assert wait_for(lambda: gone(s.id)), "the sandbox outlived its ttl"
        with pytest.raises(hutch.Error):
            s.exec("true")
    finally:
        try:
            s.close()
        except hutch.Error:
            pass


def test_set_ttl_extends_and_clears(image):
    with hutch.Sandbox(image, ttl=1.5) as s:
        s.set_ttl(60)
        assert s.ttl_left > 30
        time.sleep(2.5)
        assert not gone(s.id), "set_ttl did not move the deadline"
        s.set_ttl(None)
        assert s.ttl_left is None
        s.set_ttl(1)
        assert wait_for(lambda: gone(s.id)), "a ttl set on a running sandbox did not remove it"


def test_ttl_pause_action(image):
    with hutch.Sandbox(image, ttl=1, on_ttl="pause") as s:
        assert wait_for(lambda: s.status()["state"] == "paused"), "on_ttl='pause' did not pause it"
        with pytest.raises(hutch.PausedError):
            s.exec("true")
        s.resume()
        assert s.exec("true").ok


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ttl": 0},
        {"ttl": -1},
        {"ttl": float("nan")},
        {"ttl": "10"},
        {"on_ttl": "explode"},
        {"ports": [0]},
        {"ports": [70000]},
        {"ports": ["1:2:3:4"]},
        {"ports": [(1, 2, 3, 4)]},
        {"ports": [True]},
        {"ports": [80] * 33},
        {"devices": ["/dev/sda"]},
        {"devices": ["/dev/null"]},
    ],
)
def test_bad_extras_make_nothing(image, kwargs):
    before = {s["id"] for s in hutch.sandboxes()}
    with pytest.raises((hutch.Error, ValueError, TypeError)):
        hutch.Sandbox(image, **kwargs)
    assert {s["id"] for s in hutch.sandboxes()} == before


def _devices_setup(tmp_path):
    """A spec of a fake vendor naming /dev/zero as /dev/fake0, and a policy
    (the shipped one, its seccomp file found) that allows devices."""
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    spec = {
        "cdiVersion": "0.6.0",
        "kind": "example.com/dev",
        "devices": [
            {
                "name": "one",
                "containerEdits": {
                    "deviceNodes": [{"path": "/dev/fake0", "hostPath": "/dev/zero", "type": "c", "major": 1, "minor": 5}],
                    "env": ["EXAMPLE_DEVICE=one"],
                },
            }
        ],
    }
    (cdi / "example.json").write_text(json.dumps(spec))
    os.chmod(cdi / "example.json", 0o644)
    shipped = os.environ.get("HUTCH_POLICY") or hutch._paths.default_policy()
    seccomp = os.path.join(os.path.dirname(shipped), "seccomp.json")
    lines = [f"seccomp = {seccomp}" if line.startswith("seccomp = ") else line for line in open(shipped).read().splitlines()]
    policy = tmp_path / "devices.policy"
    policy.write_text("\n".join(lines) + "\n[devices]\nallow = yes\n")
    return str(cdi), str(policy)


PROBE = "test -c /dev/fake0 && head -c 4 /dev/fake0 | od -An -tx1 | tr -d ' '; echo \"$EXAMPLE_DEVICE\""


def test_a_cdi_device_reaches_the_sandbox_and_its_fork(image, tmp_path, monkeypatch):
    cdi, policy = _devices_setup(tmp_path)
    monkeypatch.setenv("HUTCH_CDI_DIRS", cdi)
    with hutch.Sandbox(image, devices=["example.com/dev=one"], policy=policy) as sb:
        assert sb.exec(["sh", "-c", PROBE]).stdout == b"00000000\none\n"
        assert sb.status()["devices"] == ["example.com/dev=one"]
        # A fork's devices are its parent's, resolved again for it.
        (child,) = sb.fork()
        with child:
            assert child.exec(["sh", "-c", PROBE]).stdout == b"00000000\none\n"
    with hutch.Sandbox(image, policy=policy) as plain:
        assert plain.exec(["sh", "-c", PROBE]).stdout == b"\n", "a sandbox that asked for none has none"


def test_a_plain_device_node(image, tmp_path):
    # A character device no sandbox has by default (its /dev: null, zero,
    # full, random, urandom, tty, ptmx).
    if not os.path.exists("/dev/fuse"):
        pytest.skip("this host has no /dev/fuse to hand to a sandbox")
    _, policy = _devices_setup(tmp_path)
    with hutch.Sandbox(image, devices=["/dev/fuse"], policy=policy) as sb:
        assert sb.exec(["test", "-c", "/dev/fuse"]).ok
    with hutch.Sandbox(image, policy=policy) as plain:
        assert not plain.exec(["test", "-e", "/dev/fuse"]).ok


def test_devices_refused_make_nothing(image, tmp_path, monkeypatch):
    cdi, policy = _devices_setup(tmp_path)
    monkeypatch.setenv("HUTCH_CDI_DIRS", cdi)
    before = {s["id"] for s in hutch.sandboxes()}
    with pytest.raises(hutch.Error, match="does not allow"):
        hutch.Sandbox(image, devices=["example.com/dev=one"])
    with pytest.raises(hutch.Error, match="example.com/dev=two"):
        hutch.Sandbox(image, devices=["example.com/dev=two"], policy=policy)
    assert {s["id"] for s in hutch.sandboxes()} == before


def _serve(sb, port, text):
    sb.exec(["mkdir", "-p", "/root/www"])
    sb.write_file("/root/www/index.html", text)
    p = sb.spawn(["httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", "/root/www"])
    return p


def _get(url, tries=50):
    for _ in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read()
        except OSError:
            time.sleep(0.1)
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read()


def test_published_port_reaches_a_server_inside(image):
    with hutch.Sandbox(image, ports=[8080]) as sb:
        where = sb.url(8080)
        host, port = where.rsplit(":", 1)
        assert host == "127.0.0.1" and 0 < int(port) < 65536
        assert sb.url(8080, scheme="http") == "http://" + where
        p = _serve(sb, 8080, "hello from inside")
        try:
            assert _get(f"http://{where}/index.html") == b"hello from inside"
        finally:
            p.kill()
            p.close()
        with pytest.raises(hutch.NotFoundError):
            sb.url(9090)


def test_a_host_port_is_not_taken_twice(image):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with hutch.Sandbox(image, ports=[f"127.0.0.1:{free}:8082"]) as a:
        assert a.url(8082) == f"127.0.0.1:{free}"
        before = {s["id"] for s in hutch.sandboxes()}
        with pytest.raises(hutch.Error) as e:
            hutch.Sandbox(image, ports=[(free, 8083)])
        assert e.value.errno == 98, e.value  # EADDRINUSE
        assert {s["id"] for s in hutch.sandboxes()} == before, "the refused sandbox was left behind"
        # The first one still serves it.
        p = _serve(a, 8082, "first")
        try:
            assert _get(f"http://127.0.0.1:{free}/") == b"first"
        finally:
            p.kill()
            p.close()


def test_published_port_without_a_server(image):
    with hutch.Sandbox(image, ports=[(None, 0, 8081)]) as sb:
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://{sb.url(8081)}/", timeout=5).read()
        assert sb.exec("true").ok  # the relay's failure did not hurt it


def test_snapshot_then_a_sandbox_from_it(image):
    name = f"py-snap-{os.getpid()}"
    with hutch.Sandbox(image) as sb:
        sb.write_file("/root/kept", "in the layer")
        sb.exec("mkdir -p /opt/d && echo deep >/opt/d/f && rm /bin/ls && echo t >/tmp/not-kept")
        snap = sb.snapshot(name=name)
        try:
            assert isinstance(snap, hutch.Snapshot)
            assert snap.name == name and snap.image == name and str(snap) == name
            assert snap.digest.startswith("sha256:") and len(snap.digest) == 71
            assert snap.size >= len("in the layer") and snap.files >= 3
            assert not snap.was_paused and snap.paused_seconds >= 0
            assert sb.exec("true").ok, "the snapshot left it paused"
            assert any(i["name"] == name for i in hutch.images())
            for img in (snap, snap.digest):
                with hutch.Sandbox(img) as again:
                    assert again.read_file("/root/kept") == b"in the layer"
                    assert again.read_file("/opt/d/f") == b"deep\n"
                    assert not again.exists("/bin/ls"), "a removed file came back"
                    assert not again.exists("/tmp/not-kept"), "/tmp is not part of a snapshot"
            # A name taken moves to the new snapshot (as hutch rootfs tag
            # moves one); the old image stays, under its digest.
            sb.write_file("/root/second", "2")
            second = sb.snapshot(name=name)
            try:
                assert second.digest != snap.digest
                assert hutch.image(name)["digest"] == second.digest
                assert hutch.image(snap.digest)["digest"] == snap.digest
            finally:
                hutch.remove_image(second.digest)
            # reset(to=snap): the original sandbox starts from it.
            sb.write_file("/root/later", "x")
            sb.reset(to=snap.digest)
            assert sb.read_file("/root/kept") == b"in the layer"
            assert not sb.exists("/root/later") and not sb.exists("/root/second")
        finally:
            sb.close()
            for img in (name, snap.digest):
                try:
                    hutch.remove_image(img)
                except hutch.NotFoundError:
                    pass


def test_snapshot_of_a_paused_sandbox_and_bad_names(image):
    with hutch.Sandbox(image) as sb:
        sb.write_file("/root/p", "p")
        try:
            sb.pause()
        except hutch.Error as e:
            pytest.skip(f"this host cannot pause a sandbox made here: {e}")
        snap = sb.snapshot()
        try:
            assert snap.name is None and snap.image == snap.digest
            assert snap.was_paused and sb.paused, "a paused sandbox must stay paused"
        finally:
            sb.resume()
            hutch.remove_image(snap.digest)
        for bad in ("../x", "", "a" * 300):
            with pytest.raises((hutch.Error, ValueError)):
                sb.snapshot(name=bad)
        with pytest.raises(TypeError):
            sb.snapshot(name=5)


def test_snapshot_and_ttl_of_a_closed_handle(image):
    s = hutch.Sandbox(image)
    s.close()
    for call in (s.snapshot, lambda: s.set_ttl(5), lambda: s.url(80)):
        with pytest.raises(hutch.Error):
            call()

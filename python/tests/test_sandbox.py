# SPDX-License-Identifier: Apache-2.0
"""Sandboxes: create, limits, errors, attach, images."""

import os
import subprocess

import pytest

import hutch


def test_images(image):
    names = [i["name"] for i in hutch.images()]
    assert image in names
    info = hutch.image(image)
    assert info["digest"].startswith("sha256:") and os.path.isdir(info["rootfs"])


def test_missing_image_error():
    with pytest.raises(hutch.NotFoundError) as e:
        hutch.Sandbox("no-such-image-here")
    err = e.value
    assert isinstance(err, hutch.Error) and err.errno == 2 and "no-such-image-here" in err.message
    assert err.hint and "import" in err.hint  # how to fix it, from the runtime
    assert err.message in str(err) and "No such file" in str(err)


def test_explicit_limits_fail_closed_without_cgroup(image):
    with hutch.Sandbox(image) as sb:
        limits = sb.limits()
        mode = limits["mode"]
    # The fallback's warning, which stderr gets once a day, is here every time.
    if mode == "rlimits":
        assert limits["warning"].startswith("limits: no cgroup here: rlimits per process"), limits
    else:
        assert limits["warning"] == "", limits
    if mode == "cgroup":
        with hutch.Sandbox(image, memory="64M") as sb:
            assert sb.limits()["mode"] == "cgroup"
    else:
        with pytest.raises(hutch.Error) as e:
            hutch.Sandbox(image, memory="64M")
        assert "cgroup" in e.value.message and e.value.hint


def test_bad_arguments(image):
    with pytest.raises(ValueError):
        hutch.Sandbox(image, net="host")
    with pytest.raises(ValueError):
        hutch.Sandbox(image, memory="lots")
    with pytest.raises(ValueError):
        hutch.Sandbox(image, allow=["example.com"])


def test_state_persists_between_execs(sb):
    sb.exec("echo kept > /tmp/state")
    assert sb.exec("cat /tmp/state").stdout == b"kept\n"
    assert sb.id in [s["id"] for s in hutch.sandboxes()]


def test_options(image, tmp_path):
    (tmp_path / "f").write_text("bound\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "f", 0o644)
    with hutch.Sandbox(image, memory="256M", pids=64, no_cgroups=True, env={"GREETING": "hi"}, workdir="/tmp",
                       binds=[f"{tmp_path}:/mnt/host:ro"], hostname="box") as sb:
        r = sb.exec("echo $GREETING; pwd; cat /mnt/host/f; hostname; touch /mnt/host/new")
        assert r.stdout.splitlines()[:4] == [b"hi", b"/tmp", b"bound", b"box"]
        assert r.exit_code != 0  # read-only bind
        assert sb.limits()["mode"] in ("cgroup", "rlimits")


def test_close_destroys(image):
    sb = hutch.Sandbox(image)
    sid = sb.id
    sb.close()
    assert sb.closed
    assert sid not in [s["id"] for s in hutch.sandboxes()]
    with pytest.raises(hutch.Error):
        sb.exec("true")


def test_attach_by_name(image):
    hutch_bin = os.environ.get("HUTCH_BIN")
    if not hutch_bin:
        pytest.skip("HUTCH_BIN is not set")
    name = "py-%d" % os.getpid()
    sid = subprocess.run([hutch_bin, "create", "--rootfs", image, "--name", name, "--label", "team=py"], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        with hutch.Sandbox.attach(name) as sb:
            # The handle knows the sandbox by its id, whatever it was opened by.
            assert sb.id == sid
            sb.exec("echo by-name > /tmp/mark")
        listed = [s for s in hutch.sandboxes() if s["id"] == sid]
        assert len(listed) == 1 and listed[0]["name"] == name and listed[0]["labels"] == {"team": "py"}
        r = subprocess.run([hutch_bin, "exec", "--in", sid, "cat", "/tmp/mark"], capture_output=True, text=True)
        assert r.stdout == "by-name\n"
        with pytest.raises(hutch.NotFoundError) as e:
            hutch.Sandbox.attach(name + "-missing")
        assert name + "-missing" in e.value.message
        hutch.Sandbox.attach(name).destroy()
        assert sid not in [s["id"] for s in hutch.sandboxes()]
    finally:
        subprocess.run([hutch_bin, "rm", "-f", sid], capture_output=True)


def test_attach_to_hutch_create(image):
    hutch_bin = os.environ.get("HUTCH_BIN")
    if not hutch_bin:
        pytest.skip("HUTCH_BIN is not set")
    sid = subprocess.run([hutch_bin, "create", "--rootfs", image], check=True, capture_output=True, text=True).stdout.strip()
    try:
        with hutch.Sandbox.attach(sid) as sb:
            assert sb.id == sid and not sb._h.owned
            sb.exec("echo from-python > /tmp/mark")
        # Closing an attached handle leaves the sandbox running.
        assert sid in [s["id"] for s in hutch.sandboxes()]
        r = subprocess.run([hutch_bin, "exec", "--in", sid, "cat", "/tmp/mark"], capture_output=True, text=True)
        assert r.stdout == "from-python\n"
        hutch.Sandbox.attach(sid).destroy()
        assert sid not in [s["id"] for s in hutch.sandboxes()]
    finally:
        subprocess.run([hutch_bin, "rm", sid], capture_output=True)


def test_attach_missing():
    with pytest.raises(hutch.Error):
        hutch.Sandbox.attach("000000000000")


def test_memory_limit_enforced(image):
    # rlimits or cgroup, a process cannot hold much more than the limit.
    with hutch.Sandbox(image, memory="64M", no_cgroups=True) as sb:
        r = sb.exec("head -c 200000000 /dev/zero | tail > /dev/null", timeout=60)
        assert r.exit_code != 0
        assert sb.exec("echo alive").stdout == b"alive\n"


def test_import_and_remove_image(image, tmp_path):
    # A tiny tarball of our own, imported under a name, used, removed.
    import tarfile

    src = hutch.image(image)["rootfs"]
    tar = tmp_path / "img.tar"
    with tarfile.open(tar, "w") as t:
        t.add(src, arcname=".")
    name = f"pytest-import-{os.getpid()}"
    info = hutch.import_image(tar, name)
    try:
        assert info["name"] == name and info["digest"].startswith("sha256:")
        assert name in [i["name"] for i in hutch.images()]
        with hutch.Sandbox(name) as sb:
            assert sb.exec("echo imported").stdout == b"imported\n"
    finally:
        hutch.remove_image(name)
    assert name not in [i["name"] for i in hutch.images()]
    with pytest.raises(hutch.NotFoundError):
        hutch.image(name)


def test_network_modes(image):
    with hutch.Sandbox(image) as sb:
        assert b"eth0" not in sb.exec("cat /proc/net/dev").stdout  # loopback only
    with hutch.Sandbox(image, net="proxy", allow=["allowed.invalid"]) as sb:
        r = sb.exec("cat /proc/net/dev; echo $http_proxy")
        assert b"eth0" in r.stdout and b":3128" in r.stdout
        # A host outside the allowlist is refused by hutch's proxy.
        r = sb.exec("wget -q -T 10 -O- http://not-allowed.invalid/", timeout=60)
        assert r.exit_code != 0

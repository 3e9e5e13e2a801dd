# SPDX-License-Identifier: Apache-2.0
"""Builds the hutch Python package: hutch._hutch over the runtime library.

Which runtime it links, in this order:
  - $HUTCH_BUILDDIR: that build tree's runtime/libhutch_pic.a (the tree's
    own `make` builds the package so);
  - an installed hutch that pkg-config knows (`pkg-config --cflags --libs
    hutch`: hutch.pc, libhutch.so), as bindings of system libraries do;
  - else the checkout this directory belongs to: its build tree when it is
    configured (runtime/libhutch_pic.a, position-independent copies of the
    runtime's objects, made here with its make), or, not configured yet, one
    configured and built here out of tree in python/build/runtime.
No registry and no network either way: Debian's setuptools and wheel.

Where the runtime's own files (policies/) are is written into the package
(hutch/_config.py) for the package to find them as the hutch command does."""

import glob
import os
import shlex
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
# The runtime's own dependencies, linked beside its static archive.
LIBS = ["libseccomp", "libcap", "libmnl", "libcjson"]
PIC_ARCHIVE = os.path.join("runtime", "libhutch_pic.a")


def fail(msg, hint):
    sys.exit(f"hutch: {msg}\nhint: {hint}")


def note(msg):
    print(f"hutch: {msg}", file=sys.stderr)


def run(cmd, cwd):
    note(" ".join(cmd))
    subprocess.run(cmd, cwd=cwd, check=True, stdout=sys.stderr)


def pkg_config(*args):
    """pkg-config's answer split into words; None when it fails."""
    try:
        out = subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def pkg_variable(name):
    words = pkg_config(f"--variable={name}", "hutch")
    return words[0] if words else None


def runtime_path(path):
    """A path pkg-config named, as the installed package will see it.  A
    distribution's package build links the hutch staged in its DESTDIR
    (PKG_CONFIG_SYSROOT_DIR), which it names in $HUTCH_STAGE too: what is
    written into the package (the rpath, _config.py) is then where the
    files will be installed, the stage taken off.  Without it, a staged
    hutch is used where it is (its own rpath and data directory)."""
    stage = os.environ.get("HUTCH_STAGE", "").rstrip("/")
    if path and stage and (path + "/").startswith(stage + "/"):
        return path[len(stage):] or "/"
    return path


def in_checkout():
    return os.path.exists(os.path.join(TOP, "runtime", "hutch.h"))


def system_libdir(d):
    """Whether the dynamic linker searches d without being told."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    std = {"/lib", "/usr/lib", "/lib64", "/usr/lib64"}
    std |= {os.path.join(s, multiarch) for s in ("/lib", "/usr/lib")} if multiarch else set()
    return os.path.normpath(d) in std


def installed_runtime():
    """The installed hutch pkg-config knows, or None (then the checkout)."""
    if os.environ.get("HUTCH_BUILDDIR"):
        return None
    if pkg_config("--exists", "hutch") is None:
        return None
    cflags, libs = pkg_config("--cflags", "hutch"), pkg_config("--libs", "hutch")
    libdir = pkg_variable("libdir")
    if cflags is None or libs is None or not libdir:
        fail("pkg-config knows hutch but not its --cflags, --libs and libdir", "check hutch.pc (pkg-config --debug hutch)")
    if not glob.glob(os.path.join(libdir, "libhutch.so*")):
        # A static libhutch.a is not position-independent: no extension links it.
        why = f"pkg-config's hutch has no shared library in {libdir} (libhutch.so)"
        if in_checkout():
            note(f"{why}: building from the checkout instead")
            return None
        fail(why, "install a hutch that has libhutch.so, or pip install ./python from a hutch checkout")
    datadir = runtime_path(pkg_variable("pkgdatadir"))
    if not datadir:
        share = runtime_path(pkg_variable("datadir")) or os.path.join(pkg_variable("prefix") or "/usr/local", "share")
        datadir = os.path.join(share, "hutch")
    link = list(libs)
    if not system_libdir(runtime_path(libdir)):
        link.append(f"-Wl,-rpath,{runtime_path(libdir)}")
    note(f"linking the installed hutch ({pkg_variable('prefix') or libdir}, found by pkg-config)")
    return {
        "cflags": cflags,
        "libs": link,
        "objects": [],
        "depends": [],
        "config": {"RUNTIME": "installed", "DATADIR": datadir, "SRCDIR": None, "BUILDDIR": None},
    }


def configured(builddir):
    return os.path.exists(os.path.join(builddir, "Makefile"))


def checkout_builddir():
    builddir = os.environ.get("HUTCH_BUILDDIR")
    if builddir:
        if not configured(builddir):
            fail(f"{builddir} (HUTCH_BUILDDIR) is not a configured hutch build tree", "run ./configure && make there")
    elif not in_checkout():
        fail(
            f"no installed hutch (pkg-config --exists hutch fails) and no hutch source tree above {HERE}",
            "install hutch (make install; PKG_CONFIG_PATH naming its lib/pkgconfig when that is not a standard "
            "place), or pip install ./python from a hutch checkout",
        )
    elif configured(TOP):
        builddir = TOP
    else:
        if not os.path.exists(os.path.join(TOP, "configure")):
            run(["./autogen.sh"], TOP)
        builddir = os.path.join(HERE, "build", "runtime")
        os.makedirs(builddir, exist_ok=True)
        if not configured(builddir):
            run([os.path.join(TOP, "configure"), "--disable-integration-tests"], builddir)
    if not os.environ.get("MAKELEVEL"):  # else run by that tree's make, which has built it
        jobs = os.environ.get("HUTCH_MAKE_JOBS", "2")
        run(["make", f"-j{jobs}", PIC_ARCHIVE], builddir)
    return builddir


def makefile_var(builddir, name):
    """A variable of a configured tree's Makefile, as configure set it."""
    with open(os.path.join(builddir, "Makefile"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(f"{name} = "):
                return line.split("=", 1)[1].strip()
    fail(f"{builddir}/Makefile sets no {name}", "run ./configure there again")


def checkout_runtime():
    builddir = checkout_builddir()
    srcdir = makefile_var(builddir, "abs_top_srcdir")
    deps = LIBS
    cflags, libs = pkg_config("--cflags", *deps), pkg_config("--libs", *deps)
    if cflags is None or libs is None:
        fail(f"pkg-config --cflags --libs {' '.join(deps)} failed",
             "apt-get install pkg-config libseccomp-dev libcap-dev libmnl-dev libcjson-dev")
    archive = os.path.join(builddir, PIC_ARCHIVE)
    return {
        # hutch_version.h is made by configure, in the build tree.
        "cflags": [f"-I{os.path.join(srcdir, 'runtime')}", f"-I{os.path.join(builddir, 'runtime')}"] + cflags,
        "libs": libs + ["-ldl", "-lpthread"],
        "objects": [archive],
        "depends": [os.path.join(srcdir, "runtime", "hutch.h"), archive],
        # The build's datadir is compiled into the runtime (hutch_data_dir()).
        "config": {"RUNTIME": "checkout", "DATADIR": None, "SRCDIR": srcdir, "BUILDDIR": os.path.abspath(builddir)},
    }


def check_wheel():
    """pip builds a wheel: setuptools before 70.1 needs the wheel package
    for it, which --no-build-isolation does not install."""
    if not any(a in sys.argv for a in ("bdist_wheel", "dist_info")):
        return
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1)
    except ImportError:
        try:
            import wheel  # noqa: F401
        except ImportError:
            fail(
                f"{sys.executable} has setuptools {__import__('setuptools').__version__} without the wheel package, "
                "which pip needs to build the package",
                "apt-get install python3-wheel (in a virtual environment: python3 -m venv --system-site-packages), "
                "or pip install wheel",
            )


def metadata_only():
    # `setup.py sdist`/egg_info need no compiler and no runtime.
    return any(a in sys.argv for a in ("egg_info", "sdist", "--version", "--name", "dist_info"))


check_wheel()
RUNTIME = None if metadata_only() else (installed_runtime() or checkout_runtime())


class build_py_config(build_py):
    """Writes hutch/_config.py: what this build linked and where that
    runtime's files are."""

    def run(self):
        super().run()
        if RUNTIME is None:
            return
        path = os.path.join(self.build_lib, "hutch", "_config.py")
        lines = ["# SPDX-License-Identifier: Apache-2.0", '"""Written by setup.py: the runtime this build linked."""', ""]
        lines += [f"{k} = {v!r}" for k, v in RUNTIME["config"].items()]
        text = "\n".join(lines) + "\n"
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    return
        except OSError:
            pass
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def extensions():
    if RUNTIME is None:
        return [Extension("hutch._hutch", sources=[])]
    return [
        Extension(
            "hutch._hutch",
            sources=[
                os.path.join("src", f)
                for f in ("module.c", "sandbox.c", "live.c", "proc.c", "reset.c", "extras.c", "fork.c")
            ],
            depends=[os.path.join("src", "hutchpy.h")] + RUNTIME["depends"],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"]
            # The tree's warning flags (-Werror with --enable-werror).
            + shlex.split(os.environ.get("HUTCH_EXTRA_CFLAGS", ""))
            + RUNTIME["cflags"],
            extra_objects=RUNTIME["objects"],
            extra_link_args=RUNTIME["libs"],
        )
    ]


os.chdir(HERE)
setup(ext_modules=extensions(), cmdclass={"build_py": build_py_config})

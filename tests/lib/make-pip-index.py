#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A PEP 503 simple index of stand-in wheels for pip tests.

Usage: make-pip-index.py DIR [NAME[==VERSION]...]

DIR is the index root (such as www/simple), served from DIR's parent as
http://HOST/simple/...  Without NAMEs the index has one package,
hutchdemo 1.0 (module hutchdemo, WORD = 'installed through the proxy').
Each NAME gets DIR/NAME/index.html and a wheel NAME-VERSION-py3-none-any.whl
(VERSION default 1.0) with one module NAME whose WORD is 'stand-in NAME':
doubles for packages of PyPI, which the tests cannot reach."""
import base64
import hashlib
import os
import sys
import zipfile


def make(root, name, version, word):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    wheel = f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"WORD = {word!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hutch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(os.path.join(d, wheel), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write(f'<html><body><a href="{wheel}">{wheel}</a></body></html>\n')


root = sys.argv[1]
if len(sys.argv) == 2:
    make(root, "hutchdemo", "1.0", "installed through the proxy")
for spec in sys.argv[2:]:
    name, _, version = spec.partition("==")
    make(root, name, version or "1.0", f"stand-in {name}")

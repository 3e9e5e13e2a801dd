#!/usr/bin/python3
"""A one-package index for pip tests: DIR/hutchdemo/index.html and the
wheel hutchdemo-1.0-py3-none-any.whl (module hutchdemo, WORD = 'installed
through the proxy'), served from DIR's parent as http://HOST/simple/...

Usage: make-pip-index.py DIR   (DIR is the index root, such as www/simple)"""
import base64
import hashlib
import os
import sys
import zipfile

d = os.path.join(sys.argv[1], "hutchdemo")
os.makedirs(d, exist_ok=True)
name = "hutchdemo-1.0-py3-none-any.whl"
files = {
    "hutchdemo.py": "WORD = 'installed through the proxy'\n",
    "hutchdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hutchdemo\nVersion: 1.0\n",
    "hutchdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hutch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(os.path.join(d, name), "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text)}")
    record.append("hutchdemo-1.0.dist-info/RECORD,,")
    z.writestr("hutchdemo-1.0.dist-info/RECORD", "\n".join(record) + "\n")
with open(os.path.join(d, "index.html"), "w") as f:
    f.write(f'<html><body><a href="{name}">{name}</a></body></html>\n')

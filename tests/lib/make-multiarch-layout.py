#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An OCI image layout whose index has two platforms, for the registry tests.

Usage: make-multiarch-layout.py BASE_LAYER.tar DIR TAG HOST_ARCH

Both images have BASE_LAYER (an uncompressed tar) and a second, gzipped
layer with /etc/hutch-arch holding the image's architecture: HOST_ARCH's
image runs here, the other (arm64, or amd64 on an arm64 host) is only
there to be skipped.  index.json names the index by TAG; the printed line
is the digest of HOST_ARCH's manifest.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

base, out, tag, host_arch = sys.argv[1:5]
other_arch = "arm64" if host_arch != "arm64" else "amd64"
os.makedirs(out + "/blobs/sha256", exist_ok=True)


def put(data):
    d = hashlib.sha256(data).hexdigest()
    with open(f"{out}/blobs/sha256/{d}", "wb") as f:
        f.write(data)
    return "sha256:" + d


def desc(mt, data, **extra):
    return dict({"mediaType": mt, "digest": put(data), "size": len(data)}, **extra)


base_data = open(base, "rb").read()
base_diff = "sha256:" + hashlib.sha256(base_data).hexdigest()
base_desc = desc("application/vnd.oci.image.layer.v1.tar", base_data)


def image(arch):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, content in (("etc/hutch-arch", (arch + "\n").encode()),):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, 1700000000
            t.addfile(info, io.BytesIO(content))
    raw = buf.getvalue()
    gz = gzip.compress(raw, mtime=0)
    config = {"architecture": arch, "os": "linux",
              "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HUTCH_ARCH=" + arch]},
              "rootfs": {"type": "layers",
                         "diff_ids": [base_diff, "sha256:" + hashlib.sha256(raw).hexdigest()]}}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": desc("application/vnd.oci.image.config.v1+json", json.dumps(config).encode()),
                "layers": [base_desc, desc("application/vnd.oci.image.layer.v1.tar+gzip", gz)]}
    data = json.dumps(manifest).encode()
    return desc("application/vnd.oci.image.manifest.v1+json", data,
                platform={"architecture": arch, "os": "linux"})


host = image(host_arch)
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
         "manifests": [image(other_arch), host]}
index_data = json.dumps(index).encode()
top = {"schemaVersion": 2, "manifests": [desc("application/vnd.oci.image.index.v1+json", index_data,
                                              annotations={"org.opencontainers.image.ref.name": tag})]}
with open(out + "/index.json", "w") as f:
    json.dump(top, f)
with open(out + "/oci-layout", "w") as f:
    f.write('{"imageLayoutVersion": "1.0.0"}')
print(host["digest"])

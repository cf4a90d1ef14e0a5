"""Puts the XLA FFI headers of jaxlib 0.11.2 (the oldest jaxlib the JAX bridge supports) into
a directory, for the build of the XLA FFI handlers (cmake/xla_ffi.cmake calls this).

A handler built against newer headers is refused by an older jaxlib ("API version ... is
incompatible"), while newer jaxlibs accept handlers built against older headers; so the
build uses the oldest supported version's headers. They come from the jaxlib wheel on PyPI
(pip download, no install); only the header files of xla/ffi/api are extracted.

Usage: python fetch_xla_ffi_headers.py DEST_DIR [VERSION]
Prints DEST_DIR (which then holds xla/ffi/api/ffi.h) and exits 0, or exits 1 with a reason.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import zipfile


def main() -> int:
    dest = os.path.abspath(sys.argv[1])
    version = sys.argv[2] if len(sys.argv) > 2 else "0.11.2"
    marker = os.path.join(dest, "xla", "ffi", "api", "ffi.h")
    stamp = os.path.join(dest, "JAXLIB_VERSION")
    if os.path.exists(marker) and os.path.exists(stamp) and open(stamp).read().strip() == version:
        print(dest)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp, f"jaxlib=={version}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = glob.glob(os.path.join(tmp, "jaxlib-*.whl"))
        if done.returncode != 0 or not wheels:
            print(f"could not download jaxlib=={version}: {done.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
        staging = tempfile.mkdtemp(dir=os.path.dirname(dest) or ".")
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.startswith("jaxlib/include/xla/ffi/api/") and name.endswith(".h"):
                    target = os.path.join(staging, name[len("jaxlib/include/"):])
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with wheel.open(name) as src, open(target, "wb") as out:
                        out.write(src.read())
        with open(os.path.join(staging, "JAXLIB_VERSION"), "w") as f:
            f.write(version + "\n")
        if os.path.isdir(dest):
            import shutil

            shutil.rmtree(dest)
        os.replace(staging, dest)  # whole directory at once: never half-extracted
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())

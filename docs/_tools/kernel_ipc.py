"""The docs' notebook kernels talk over Unix sockets, not TCP ports (docs/conf.py calls
``install``; start reading there).

Why: jupyter_client chooses a new kernel's five TCP ports in the reading process (it binds port
0 and closes the socket, once per port), writes them into the connection file and launches
ipykernel, which binds them a second or two later. Inside that window the port is free for
anyone: ``sphinx-build -j N`` (scripts/docs.sh) starts N kernels side by side, and the
clients' own connections take ephemeral ports too. When one of them lands on a chosen port the
kernel dies at start ("Address already in use", ipykernel's ``_try_bind_socket``) and the
page fails; that failed a CI run of the docs step on 2026-12-07. With ``transport = "ipc"``
each kernel's sockets are files named after a path of its own (``<dir>/k<pid>-<n>-<port>``,
one directory per build), so two kernels cannot collide and no port is ever chosen.

What it changes: ``nbclient.client.NotebookClient.create_kernel_manager`` returns its kernel
manager set to ``transport = "ipc"``, ``ip = <that path>`` and ``cache_ports = False`` (port
caching binds TCP sockets). The directory is made by ``install`` in the building process and
removed at its exit; the kernel manager deletes its socket files when the kernel stops.
tests/test_docs_site.py checks that a page executes this way.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from typing import Any

from nbclient.client import NotebookClient

_MARK = "_raptor_ipc_kernels"


def install() -> str:
    """Patch nbclient so that every kernel it starts uses the ipc transport with socket files
    in a fresh temporary directory (returned); idempotent (a second call returns the same
    directory). The directory is short (under the system's temporary directory) because a Unix
    socket's path is limited to about 107 bytes."""
    original = NotebookClient.create_kernel_manager
    existing = getattr(original, _MARK, None)
    if existing is not None:
        return existing
    directory = tempfile.mkdtemp(prefix="raptor-docs-ipc-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    counter = itertools.count()

    def create_ipc_kernel_manager(self: NotebookClient) -> Any:
        km = original(self)
        km.transport = "ipc"
        km.cache_ports = False
        # Sphinx's readers are forked processes: the pid tells them apart, the counter a
        # reader's successive kernels.
        km.ip = os.path.join(directory, f"k{os.getpid()}-{next(counter)}")
        return km

    setattr(create_ipc_kernel_manager, _MARK, directory)
    create_ipc_kernel_manager.__doc__ = original.__doc__
    NotebookClient.create_kernel_manager = create_ipc_kernel_manager  # type: ignore[method-assign]
    return directory

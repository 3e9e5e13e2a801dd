# SPDX-License-Identifier: Apache-2.0
"""Sandbox.reset: a live sandbox back to its image's state (hutch-exec(1), RESET)."""

from typing import Optional, Union

from ._extras import Snapshot, image_arg


class _ResetMixin:
    def reset(self, to: Union[None, str, Snapshot] = None) -> None:
        """Every process but the sandbox's init ends, and its writable layer,
        /tmp and /dev/shm are empty again: it starts anew from the
        configuration it was created with, under the same id, name and
        labels.  ``to`` names another image (in the store this handle was
        given), or is a hutch.Snapshot, to start from instead, from now on.  Other handles of it
        follow at their next call; processes running in it end.  Raises
        hutch.Error (ESTALE) when its policy changed since it was made."""
        self._h.reset(image_arg(to), self._store)

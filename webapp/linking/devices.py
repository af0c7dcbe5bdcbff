"""Where this process's linker work computes, one decision for all of it (:func:`linker.device.choose_device`).

Batch work (an index build, an evaluation, a calibration) encodes on ``LINKER_DEVICE``: CUDA where torch sees a
GPU unless it says ``cpu``. The linker a process keeps loaded to serve requests (:mod:`webapp.linking.registry`:
the candidate panel, ``POST /api/link``, stored suggestions) encodes on ``LINKER_SERVING_DEVICE``, the CPU by
default: a request encodes a few mentions, and each gunicorn process would hold its own copy of the model on the GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:  # linker.device imports torch: where a device is chosen, not at django.setup() (issue #45)
    import torch

__all__ = ["batch_device", "serving_device"]


def batch_device() -> torch.device:
    """The device of index builds, evaluations and calibrations (``LINKER_DEVICE``; auto: CUDA where there is one)."""
    return _resolve(settings.LINKER_DEVICE, "LINKER_DEVICE")


def serving_device() -> torch.device:
    """The device of the linkers this process serves (``LINKER_SERVING_DEVICE``; auto: as :func:`batch_device`)."""
    return _resolve(settings.LINKER_SERVING_DEVICE, "LINKER_SERVING_DEVICE")


def _resolve(value: str, name: str) -> torch.device:
    from linker.device import choose_device, parse_device

    if value == "auto":
        return choose_device()  # LINKER_DEVICE, else what torch sees
    return parse_device(value, name)

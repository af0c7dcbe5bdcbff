"""Where the linker computes: one device choice for training, index builds, evaluation and linking.

:func:`choose_device` is the only place it is decided. An explicit device (a ``--device`` flag, a recipe config's
``device``) wins; otherwise the ``LINKER_DEVICE`` environment variable (``cpu``, ``cuda``, ``cuda:1`` ...; empty or
``auto``: detect); otherwise CUDA when torch sees a GPU, else the CPU. ``LINKER_DEVICE=cpu`` keeps a process off
its GPU (a web server, a CPU worker on a GPU host).

Only the encoder moves: faiss stays faiss-cpu (the search), tf-idf stays scipy. Vectors are computed in float32 on
either device (no autocast), so an index encoded on a GPU is searched with queries encoded on a CPU: they agree to
float rounding (~1e-6 in cosine), far below the gaps between candidates.

Batch sizes follow the device (:func:`encode_batch_size`): on a CPU, length-sorted micro-batches of
:data:`CPU_ENCODE_BATCH` names measured fastest (a larger batch pads more and finds no idle core to fill); on CUDA
a batch of at least :data:`CUDA_ENCODE_BATCH` names, since a GPU is starved by small batches. Names are at most 25
tokens, so 1,024 of them are ~25K tokens a forward pass: a few hundred MB of activations for a BERT-base model in
inference mode, which any CUDA card of 8 GB holds. ``bench/gpu_encode.py --batch-sizes`` measures the choice.
"""

from __future__ import annotations

import os

import torch

__all__ = ["DEVICE_ENV", "CPU_ENCODE_BATCH", "CUDA_ENCODE_BATCH", "choose_device", "parse_device", "encode_batch_size",
           "device_label", "limit_threads"]

DEVICE_ENV = "LINKER_DEVICE"
CPU_ENCODE_BATCH = 64
CUDA_ENCODE_BATCH = 1024


def choose_device(prefer: str | torch.device | None = None) -> torch.device:
    """The device to compute on: ``prefer`` when given (anything ``torch.device`` reads; ``""`` and ``"auto"`` count
    as not given), else ``LINKER_DEVICE``, else CUDA if torch sees a GPU, else the CPU.

    ``ValueError`` naming the variable when ``LINKER_DEVICE`` is not a device, or asks for CUDA where torch sees
    none (a worker that would fail every job is stopped at its first one, with the reason)."""
    if prefer is not None and str(prefer).strip().lower() not in ("", "auto"):
        return torch.device(prefer)
    forced = os.environ.get(DEVICE_ENV, "").strip()
    if forced and forced.lower() != "auto":
        return parse_device(forced, DEVICE_ENV)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def parse_device(value: str, source: str) -> torch.device:
    """A device a setting names (``source``: the setting, for the message), checked against this machine:
    ``ValueError`` when it is not a device, or names a CUDA device torch does not see."""
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        raise ValueError(f"{source}={value!r} is not a device: use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only torch build" if torch.version.cuda is None else "no GPU visible"
            raise ValueError(f"{source}={value!r}, but torch sees no CUDA device here ({build}); "
                             "use cpu, or auto to take a GPU only where there is one")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{source}={value!r}, but this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


def encode_batch_size(device: torch.device | str, requested: int) -> int:
    """Names per forward pass when encoding (inference) on ``device``, asked for ``requested``: at most
    :data:`CPU_ENCODE_BATCH` on a CPU, at least :data:`CUDA_ENCODE_BATCH` on CUDA (see the module's docstring)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return max(1, min(requested, CPU_ENCODE_BATCH))
    if kind == "cuda":
        return max(requested, CUDA_ENCODE_BATCH)
    return max(1, requested)


def device_label(device: torch.device | str) -> str:
    """``cpu`` or ``cuda:0 (NVIDIA H100 80GB HBM3)``: what a log line or an artifact's config records."""
    device = torch.device(device)
    if device.type != "cuda":
        return str(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


def limit_threads(n: int) -> None:
    """At most ``n`` compute threads in this process: torch's intra-op pool, the BLAS numpy multiplies with (the
    flat index's search) and OpenMP (faiss).

    For a process that answers small requests (a web server): a single query is too small to share out, and the
    threads of each pool wait for each other at every operation, so when another process holds a core (a worker
    encoding an index, a second request) every wait becomes a time slice. Measured on this project's 2-core machine
    beside a busy worker: one query encoded by MiniLM in 349 ms (p50) with torch's 2 threads, 10 ms with 1; the
    flat search of 74K names 16 ms with 2 BLAS threads, 10 ms with 1. Batch work (index builds, training) keeps
    every core."""
    import faiss
    from threadpoolctl import threadpool_limits

    if n < 1:
        raise ValueError(f"a process needs at least one compute thread, not {n}")
    torch.set_num_threads(n)
    threadpool_limits(limits=n)  # applies until the process ends (not used as a context manager)
    faiss.omp_set_num_threads(n)  # the tf-idf search reads torch's count (linker.sparse)

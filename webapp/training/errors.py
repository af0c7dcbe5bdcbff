"""Errors of training runs, shared by the run service, the dataset builder and evaluation."""


class RunCancelled(Exception):
    """An admin asked the running job to stop; raised from its progress report."""


class RunError(ValueError):
    """The run cannot be started or continued as asked; the message says why."""

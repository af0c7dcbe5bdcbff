"""Background jobs: one life cycle for every kind of work a worker runs (imports, training runs, evaluations,
word-vector uploads, ...). See :mod:`webapp.jobs.models`."""

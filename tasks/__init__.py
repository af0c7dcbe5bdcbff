"""Celery tasks. Each takes ids, loads its rows, calls a service function and records the outcome.

Tasks never receive model instances or file contents: a retried or re-delivered task reads the current
state from the database and is idempotent.
"""

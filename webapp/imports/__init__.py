"""Imports: a dictionary or a collection's documents read from a file (or a pasted text) by a worker, one job each
(webapp.jobs); the admin's import pages and the Imports list."""

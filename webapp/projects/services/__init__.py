"""Project services, one module per responsibility.

- :mod:`.membership`: creating projects, adding and removing members.
- :mod:`.workspaces`: an annotator's workspace collection and their copies of the project's documents.

Assignment and adjudication build on curation and are :mod:`webapp.teamwork.services`.
"""

from __future__ import annotations


class ProjectError(ValueError):
    """The request cannot be carried out as asked; the message says why, in words for the manager or curator."""

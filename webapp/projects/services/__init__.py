"""Team curation services, one module per responsibility.

- :mod:`.membership`: creating projects, adding and removing members.
- :mod:`.workspaces`: an annotator's workspace collection and their copies of the project's documents.
- :mod:`.assignment`: assigning documents (by hand, round robin, N annotators per document), marking them done.
- :mod:`.adjudication`: the annotators' decisions side by side per span, and resolving them onto the project's document.
"""

from __future__ import annotations


class ProjectError(ValueError):
    """The request cannot be carried out as asked; the message says why, in words for the manager or curator."""

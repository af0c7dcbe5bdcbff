"""The team workflow's services, one module per responsibility; they refuse with
:class:`webapp.projects.services.ProjectError`, as the project services do.

- :mod:`.assignment`: assigning documents (by hand, round robin, N annotators per document), marking them done.
- :mod:`.adjudication`: the annotators' decisions side by side per span, and resolving them onto the project's document.
"""

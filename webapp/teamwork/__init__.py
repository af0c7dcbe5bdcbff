"""The team workflow on a project, built on curation: assigning documents onto annotators' copies, the annotator's
queue, agreement between the copies, adjudication onto the project's document, and curator statistics.

Each annotator works on a *copy* of every document assigned to them, in a workspace collection of their own, with
the ordinary curation screen; nobody sees another annotator's copy before adjudication. The adjudicator compares the
copies, takes one annotator's decision (or a third one) and that becomes the curated link of the project's own
document, with who decided it (through curation's decision service).

It sits above curation (README, "Layers"). The projects themselves, their members and roles, who may see and decide
which documents, and the models of assignments and adjudications are :mod:`webapp.projects`, below curation,
because every page that shows documents asks them. Its pages keep the "projects" URL namespace (webapp.urls).
"""

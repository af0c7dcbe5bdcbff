"""Team curation: projects, members with per-project roles, assignment, double annotation, agreement, adjudication.

A project is a collection (or some of its documents) curated by a team. Each annotator works on a *copy* of every
document assigned to them, in a workspace collection of their own, with the ordinary curation screen; nobody sees
another annotator's copy before adjudication. The adjudicator compares the copies, takes one annotator's decision
(or a third one) and that becomes the curated link of the project's own document, with who decided it.
"""

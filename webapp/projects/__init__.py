"""Team curation projects: projects, members with per-project roles, who may see and decide which documents
(access.py), concept filters, annotators' workspaces, and the models of assignments and adjudications.

A project is a collection (or some of its documents) curated by a team. Each annotator works on a *copy* of every
document assigned to them, in a workspace collection of their own; the adjudicator's choice becomes the curated link
of the project's own document. This app sits below curation: every page that shows documents asks its access rules.
The workflow that builds on curation (assignment, agreement, adjudication, statistics) is :mod:`webapp.teamwork`.
"""

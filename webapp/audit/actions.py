"""The names of the audit log's actions, "<kind>.<verb>": every writer records under one of these, and the audit
page offers them as its action filter. A new kind of write adds its name here."""

from __future__ import annotations

# Curation: a decision on a mention (accept, relink, NIL, reject, a mention added, a span fixed) and its undo. The
# curation decision log keeps the full account; the event links to the mention on its document page.
DECISION_MADE = "decision.made"
DECISION_UNDONE = "decision.undone"

# Imports of dictionaries and documents (webapp.imports).
IMPORT_STARTED = "import.started"
IMPORT_FINISHED = "import.finished"
IMPORT_FAILED = "import.failed"
# A PubMed update forced onto a document curators had decided on (webapp.corpus.pubmed_import): the document
# withdrawn by a DeleteCitation (its decisions go with it), or its changed text replacing theirs.
DOCUMENT_WITHDRAWN = "document.withdrawn"
DOCUMENT_REPLACED = "document.replaced"

# Training runs, the promotion of a trained model through its gate, the switch of the index a dictionary serves,
# and the mention detector a dictionary's collections use.
RUN_STARTED = "run.started"
RUN_CANCELLED = "run.cancelled"
CORPUS_RUN_STARTED = "corpus_run.started"  # detect + link over a collection (webapp.curation.corpus_runs)
JOB_CANCELLED = "job.cancelled"  # any other kind of job, cancelled on the Jobs page or through /api/jobs/
MODEL_PROMOTED = "model.promoted"
INDEX_ACTIVATED = "index.activated"
DETECTOR_ACTIVATED = "detector.activated"
DETECTOR_RETIRED = "detector.retired"

# Projects: creation, members and their project roles.
PROJECT_CREATED = "project.created"
MEMBER_ADDED = "member.added"
MEMBER_REMOVED = "member.removed"
MEMBER_ROLE_CHANGED = "member.role_changed"

# An admin's or a manager's settings: a project's (its concept filter too), a dictionary's retrain policy and
# promotion gate, a collection's auto-accept threshold.
SETTINGS_CHANGED = "settings.changed"

# Accounts and sessions.
LOGIN_SUCCEEDED = "login.succeeded"
LOGIN_FAILED = "login.failed"
LOGOUT = "logout"
USER_CREATED = "user.created"
USER_ROLE_CHANGED = "user.role_changed"
USER_DEACTIVATED = "user.deactivated"
USER_REACTIVATED = "user.reactivated"
USER_INVITED = "user.invited"  # a link to set the password was mailed (webapp.people)
TOKEN_CREATED = "token.created"
TOKEN_REVOKED = "token.revoked"

# The retention sweep's removal of old events (webapp.audit.retention): the log tells of its own gaps.
AUDIT_PRUNED = "audit.pruned"

ACTIONS: tuple[str, ...] = (
    DECISION_MADE, DECISION_UNDONE,
    IMPORT_STARTED, IMPORT_FINISHED, IMPORT_FAILED, DOCUMENT_WITHDRAWN, DOCUMENT_REPLACED,
    RUN_STARTED, RUN_CANCELLED, CORPUS_RUN_STARTED, JOB_CANCELLED, MODEL_PROMOTED, INDEX_ACTIVATED, DETECTOR_ACTIVATED, DETECTOR_RETIRED,
    PROJECT_CREATED, MEMBER_ADDED, MEMBER_REMOVED, MEMBER_ROLE_CHANGED,
    SETTINGS_CHANGED,
    LOGIN_SUCCEEDED, LOGIN_FAILED, LOGOUT, USER_CREATED, USER_ROLE_CHANGED, USER_DEACTIVATED,
    USER_REACTIVATED, USER_INVITED,
    TOKEN_CREATED, TOKEN_REVOKED, AUDIT_PRUNED,
)

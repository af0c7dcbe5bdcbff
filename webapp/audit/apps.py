"""The audit log: one append-only event per write (who, when, what, a short before/after)."""
from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "webapp.audit"
    label = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        # Logins are Django's (webapp.core below only configures them): their signals are heard here, as core may
        # not import the audit log above it.
        from django.contrib.auth import signals

        from webapp.audit import sessions

        signals.user_logged_in.connect(sessions.logged_in, dispatch_uid="audit.login")
        signals.user_login_failed.connect(sessions.login_failed, dispatch_uid="audit.login_failed")
        signals.user_logged_out.connect(sessions.logged_out, dispatch_uid="audit.logout")

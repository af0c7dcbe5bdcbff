"""The audit log: one append-only event per write (who, when, what, a short before/after)."""

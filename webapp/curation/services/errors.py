"""The curation services' refusal, shared by every service that may refuse a curator's request."""


class CurationError(ValueError):
    """The request cannot be carried out as asked; the message says why, in words for the curator."""

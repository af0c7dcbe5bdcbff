"""People: the users page (accounts, roles, invitations, deactivation, adding project members) and named API
tokens. A layer just below the API, which authenticates with its tokens (webapp.api.authentication)."""

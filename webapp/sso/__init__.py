"""Single sign-on with OpenID Connect (mozilla-django-oidc): the login through an identity provider, the users it
creates, the roles and project memberships mapped from its claims, and the logout that ends both sessions.

Configured by the environment (``OIDC_*``, ``LOCAL_LOGIN_ENABLED``; docs/sso.md).
"""

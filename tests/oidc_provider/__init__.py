"""A real OpenID Connect provider for the single sign-on tests: django-oauth-toolkit's, in its own small Django
project, run in a subprocess on a loopback port with its own SQLite database and an RSA key made at start-up
(:func:`tests.oidc_provider.launch.running_provider`)."""

"""``python -m tests.oidc_provider.run``: make the provider's database (users, groups, the workbench's client) from
``OP_SETUP`` (JSON) and serve it on 127.0.0.1:``OP_PORT`` with Django's threaded development server."""

from __future__ import annotations

import json
import os
from typing import Any


def setup(data: dict[str, Any]) -> None:
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    for person in data["users"]:
        user = User.objects.create_user(person["username"], email=person.get("email", ""), password=person["password"],
                                        first_name=person.get("first_name", ""), last_name=person.get("last_name", ""))
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in person.get("groups", [])])
    client = data["client"]
    Application.objects.create(
        name="EL Workbench", client_id=client["client_id"], client_secret=client["client_secret"],
        client_type=Application.CLIENT_CONFIDENTIAL, authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=client["redirect_uri"], post_logout_redirect_uris=client["post_logout_redirect_uri"],
        algorithm=Application.RS256_ALGORITHM, skip_authorization=False,
    )


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application

    call_command("migrate", verbosity=0)
    setup(json.loads(os.environ["OP_SETUP"]))
    run("127.0.0.1", int(os.environ["OP_PORT"]), get_wsgi_application(), threading=True)


if __name__ == "__main__":
    main()

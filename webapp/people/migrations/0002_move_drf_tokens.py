"""Move the keys of DRF's one token per user into named tokens, so pipelines holding them keep working.

Each becomes a token named "Token from before named tokens", with the same key (its SHA-256 kept, the plain key
deleted from DRF's table), no expiry, full access and no project scope, as before. Not reversible: the plain keys
are gone (reversing leaves the named tokens, which still work).
"""

import hashlib

from django.db import migrations

NAME = "Token from before named tokens"


def move_keys(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("people", "ApiToken")
    for old in Token.objects.all().iterator():
        key_hash = hashlib.sha256(old.key.encode()).hexdigest()
        if not ApiToken.objects.filter(key_hash=key_hash).exists():
            ApiToken.objects.create(user_id=old.user_id, name=NAME, key_hash=key_hash, prefix=old.key[:12],
                                    created_at=old.created, expires_at=None)
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("people", "0001_api_tokens"), ("authtoken", "0004_alter_tokenproxy_options")]
    operations = [migrations.RunPython(move_keys, migrations.RunPython.noop)]

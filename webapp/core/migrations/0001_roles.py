"""Create the ``curator`` and ``admin`` groups with their model permissions."""

from django.db import migrations

CURATOR_MODELS = {"corpus": ["mention", "link"]}
READ_ONLY_MODELS = {"vocab": ["dictionary", "dictionaryversion", "concept", "name", "hierarchyedge", "knowntype"], "corpus": ["collection", "document"]}


def create_roles(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    curator, _ = Group.objects.get_or_create(name="curator")
    admin, _ = Group.objects.get_or_create(name="admin")
    view = Permission.objects.filter(codename__startswith="view_", content_type__app_label__in=["vocab", "corpus"])
    curate = Permission.objects.filter(content_type__app_label="corpus", content_type__model__in=CURATOR_MODELS["corpus"])
    curator.permissions.add(*view, *curate)
    admin.permissions.add(*Permission.objects.filter(content_type__app_label__in=["vocab", "corpus"]))
    # Curator decisions add curator synonyms to the dictionary.
    curator.permissions.add(*Permission.objects.filter(content_type__app_label="vocab", codename="add_name"))


def drop_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["curator", "admin"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("vocab", "0001_initial"),
        ("corpus", "0001_initial"),
    ]
    operations = [migrations.RunPython(create_roles, drop_roles)]

"""Create the read-only ``viewer`` group: a curator's view permissions, nothing that adds or changes."""

from django.db import migrations


def create_viewer(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    viewer, _ = Group.objects.get_or_create(name="viewer")
    viewer.permissions.add(*Permission.objects.filter(codename__startswith="view_",
                                                      content_type__app_label__in=["vocab", "corpus"]))


def drop_viewer(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="viewer").delete()


class Migration(migrations.Migration):
    dependencies = [("core", "0004_import_jobs_moved")]
    operations = [migrations.RunPython(create_viewer, drop_viewer)]

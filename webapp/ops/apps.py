from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "webapp.ops"
    label = "ops"
    verbose_name = "Operations: backup and restore"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "webapp.core"
    label = "core"
    verbose_name = "Workbench core (accounts, roles, health)"

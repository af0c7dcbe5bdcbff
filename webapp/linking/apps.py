from django.apps import AppConfig


class LinkingConfig(AppConfig):
    name = "webapp.linking"
    label = "linking"
    verbose_name = "Serving: index and detector versions"

from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "webapp.curation"
    label = "curation"
    verbose_name = "Curation decisions"

from django.apps import AppConfig


class VocabConfig(AppConfig):
    name = "webapp.vocab"
    label = "vocab"
    verbose_name = "Dictionaries and ontologies"

from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "webapp.corpus"
    label = "corpus"
    verbose_name = "Documents, mentions and links"

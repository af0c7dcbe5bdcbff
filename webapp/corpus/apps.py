from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "webapp.corpus"
    label = "corpus"
    verbose_name = "Documents, mentions and links"

    def ready(self) -> None:
        from webapp.corpus.detection import register_kind

        register_kind()  # mention detection is a kind of job (webapp.jobs)

from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "webapp.curation"
    label = "curation"
    verbose_name = "Curation decisions"

    def ready(self) -> None:
        from webapp.curation.corpus_runs.jobs import register_kind

        register_kind()  # a corpus run is a kind of job (webapp.jobs): a parent and its chunks

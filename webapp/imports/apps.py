from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "webapp.imports"
    label = "imports"
    verbose_name = "Imports"

    def ready(self) -> None:
        from webapp.imports.jobs import register_kind

        register_kind()

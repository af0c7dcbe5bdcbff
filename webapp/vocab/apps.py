from django.apps import AppConfig


class VocabConfig(AppConfig):
    name = "webapp.vocab"
    label = "vocab"
    verbose_name = "Dictionaries and ontologies"

    def ready(self) -> None:
        from webapp.training.signals import index_promoted
        from webapp.vocab.releases import carry_over_on_promotion

        index_promoted.connect(carry_over_on_promotion, dispatch_uid="vocab-carry-over-on-promotion")

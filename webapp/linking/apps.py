from django.apps import AppConfig


class LinkingConfig(AppConfig):
    name = "webapp.linking"
    label = "linking"
    verbose_name = "Serving: index and detector versions"

    def ready(self) -> None:
        # An index version saved or deleted here (an activation, a retirement): the next lookup asks which is active.
        from django.db.models.signals import post_delete, post_save

        from webapp.linking.models import IndexVersion
        from webapp.linking.registry import index_version_changed
        from webapp.linking.vector_tables import drop_index_table, install

        install()  # pgvector indexes (linker.pgvector_index) live in this app's database
        post_delete.connect(drop_index_table, sender=IndexVersion, dispatch_uid="linking-drop-vector-table")

        post_save.connect(index_version_changed, sender=IndexVersion, dispatch_uid="linking-forget-active-on-save")
        post_delete.connect(index_version_changed, sender=IndexVersion, dispatch_uid="linking-forget-active-on-delete")

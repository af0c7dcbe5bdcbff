"""The artifact store (docs/artifacts.md): blobs by sha256, folder manifests, and the local cache."""
from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "webapp.artifacts"
    label = "artifacts"
    verbose_name = "Artifact store"

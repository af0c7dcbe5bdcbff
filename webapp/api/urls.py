from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from webapp.api import audit, corpus_runs, detectors, indexes, jobs, training, views, word_vectors
from webapp.api.docs import RedocView, SwaggerView
from webapp.api.token import ObtainTokenView

app_name = "api"

router = DefaultRouter()
router.register("dictionaries", views.DictionaryViewSet, basename="dictionary")
router.register("concepts", views.ConceptViewSet, basename="concept")
router.register("collections", views.CollectionViewSet, basename="collection")
router.register("documents", views.DocumentViewSet, basename="document")
router.register("mentions", views.MentionViewSet, basename="mention")
router.register("links", views.LinkViewSet, basename="link")
router.register("jobs", jobs.JobViewSet, basename="job")
router.register("corpus-runs", corpus_runs.CorpusRunViewSet, basename="corpus-run")
router.register("audit", audit.AuditEventViewSet, basename="audit-event")
router.register("imports", views.ImportJobViewSet, basename="import")
router.register("training-runs", training.TrainingRunViewSet, basename="training-run")
router.register("index-versions", indexes.IndexVersionViewSet, basename="index-version")
router.register("detectors", detectors.DetectorVersionViewSet, basename="detector")
router.register("word-vectors", word_vectors.WordVectorViewSet, basename="word-vectors")
router.register("word-vector-uploads", word_vectors.WordVectorUploadViewSet, basename="word-vector-upload")

urlpatterns = [
    # Before the router: "dictionaries/upload/" would otherwise be read as the detail of a dictionary "upload".
    path("dictionaries/upload/", views.DictionaryUploadView.as_view(), name="dictionary-upload"),
    path("link", views.LinkTextView.as_view(), name="link-text"),
    path("link/", views.LinkTextView.as_view(schema=None)),  # the same, for clients that add a slash
    # Pipelines trade a username and password for a token (then send "Authorization: Token <key>");
    # throttled, and locked out with the login page after too many failures.
    path("auth/token/", ObtainTokenView.as_view(), name="token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", RedocView.as_view(url_name="api:schema"), name="redoc"),
    *router.urls,
    # Last: a JSON 404 for unknown paths (an id with a "/" in it, a malformed slug) instead of Django's HTML
    # page. Only paths ending in "/", so that CommonMiddleware still redirects "/api/mentions" to "/api/mentions/".
    re_path(r"^.*/$", views.NotFoundView.as_view(), name="not-found"),
]

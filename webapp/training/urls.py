from django.urls import path

from webapp.training import compare_views, loop_views, model_views, views

app_name = "training"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/new/", views.run_start, name="start"),
    path("runs/<int:pk>/", views.run_detail, name="detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="cancel"),
    path("indexes/<int:pk>/promote/", views.index_promote, name="promote"),
    path("indexes/<int:pk>/evaluate/", views.index_evaluate, name="evaluate"),
    path("indexes/build/", model_views.index_build, name="build-index"),
    path("indexes/<int:pk>/progress/", model_views.index_progress, name="index-progress"),
    path("indexes/<int:pk>/cancel/", model_views.index_cancel, name="index-cancel"),
    path("collections/<slug:slug>/linking/", model_views.collection_linking_note, name="collection-linking"),
    path("models/", model_views.model_list, name="models"),
    path("loop/<slug:slug>/", loop_views.loop_settings, name="loop"),
    path("compare/", compare_views.compare, name="compare"),
    path("compare/indexes/<int:pk>/collections/<slug:slug>/", compare_views.compare_cell, name="compare-cell"),
    path("compare/indexes/<int:pk>/collections/<slug:slug>/evaluate/", compare_views.compare_evaluate,
         name="compare-evaluate"),
    path("compare/indexes/<int:pk>/collections/<slug:slug>/changes/", compare_views.compare_changes,
         name="compare-changes"),
    path("detectors/<int:pk>/activate/", model_views.detector_activate, name="detector-activate"),
    path("detectors/<int:pk>/retire/", model_views.detector_retire, name="detector-retire"),
    path("models/word-vectors/upload/", model_views.word_vectors_upload, name="upload-word-vectors"),
    path("models/<slug:slug>/latent-types/", model_views.latent_type_list, name="latent-types"),
]

from django.urls import path

from webapp.curation import corpus_run_views, panel_views, views

app_name = "curation"
urlpatterns = [
    path("", views.index, name="index"),
    path("mentions/<int:pk>/panel/", panel_views.panel, name="panel"),
    path("mentions/<int:pk>/decide/", panel_views.decide, name="decide"),
    path("mentions/<int:pk>/search/", panel_views.search, name="search"),
    path("mentions/<int:pk>/span/", panel_views.fix_span, name="fix-span"),
    path("mentions/<int:pk>/family/<int:concept_pk>/", panel_views.family, name="family"),
    path("decisions/<int:pk>/undo/", panel_views.undo, name="undo"),
    path("documents/<int:pk>/undo/", panel_views.undo_last, name="undo-last"),
    path("documents/<int:pk>/mentions/", panel_views.add_mention, name="add-mention"),
    path("documents/<int:pk>/detection/", views.detection, name="detection"),
    path("documents/<int:pk>/detect/", views.detect_again, name="detect-again"),
    path("<slug:slug>/", views.dashboard, name="dashboard"),
    path("<slug:slug>/queue/next/", views.queue_next, name="queue-next"),
    path("<slug:slug>/suggest/", views.suggest, name="suggest"),
    path("<slug:slug>/auto-accept/", views.auto_accept, name="auto-accept"),
    path("<slug:slug>/corpus-run/", corpus_run_views.start, name="corpus-run"),
    path("<slug:slug>/documents/<int:pk>/", views.document, name="document"),
]

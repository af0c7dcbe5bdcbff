from django.urls import path

from webapp.curation import views

app_name = "curation"
urlpatterns = [
    path("", views.index, name="index"),
    path("mentions/<int:pk>/panel/", views.panel, name="panel"),
    path("mentions/<int:pk>/decide/", views.decide, name="decide"),
    path("mentions/<int:pk>/search/", views.search, name="search"),
    path("mentions/<int:pk>/span/", views.fix_span, name="fix-span"),
    path("mentions/<int:pk>/family/<int:concept_pk>/", views.family, name="family"),
    path("decisions/<int:pk>/undo/", views.undo, name="undo"),
    path("documents/<int:pk>/undo/", views.undo_last, name="undo-last"),
    path("documents/<int:pk>/mentions/", views.add_mention, name="add-mention"),
    path("documents/<int:pk>/detection/", views.detection, name="detection"),
    path("documents/<int:pk>/detect/", views.detect_again, name="detect-again"),
    path("<slug:slug>/", views.dashboard, name="dashboard"),
    path("<slug:slug>/queue/next/", views.queue_next, name="queue-next"),
    path("<slug:slug>/suggest/", views.suggest, name="suggest"),
    path("<slug:slug>/auto-accept/", views.auto_accept, name="auto-accept"),
    path("<slug:slug>/documents/<int:pk>/", views.document, name="document"),
]

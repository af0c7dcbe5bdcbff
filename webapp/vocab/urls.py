from django.urls import path

from webapp.vocab import views

app_name = "vocab"
urlpatterns = [
    path("", views.dictionary_list, name="list"),
    path("<slug:slug>/", views.dictionary_detail, name="detail"),
    path("<slug:slug>/search/", views.concept_search, name="search"),
    # The releases page (<slug>/releases/) is training's: webapp.training.release_views, included by webapp.urls.
    # Concept ids contain ':' (MESH:D003920, HP:0001250) and, in some sources, '/'.
    path("<slug:slug>/concepts/<path:concept_id>/", views.concept_detail, name="concept"),
]

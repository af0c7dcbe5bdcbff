from django.urls import path

from webapp.corpus import views

app_name = "corpus"
urlpatterns = [
    path("", views.collection_list, name="list"),
    path("<slug:slug>/", views.collection_detail, name="detail"),
    path("<slug:slug>/documents/<int:pk>/", views.document_detail, name="document"),
]

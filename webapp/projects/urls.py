from django.urls import path

from webapp.projects import views

app_name = "projects"
urlpatterns = [
    path("", views.project_list, name="list"),
    path("new/", views.project_create, name="create"),
    path("<slug:slug>/settings/", views.project_settings, name="settings"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/members/<int:pk>/remove/", views.remove_member, name="remove-member"),
    # The overview (<slug>/), assignment, queue, statistics, agreement and adjudication are the team workflow's:
    # webapp.teamwork.urls, included after these by webapp.urls in the same namespace.
]

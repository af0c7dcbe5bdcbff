from django.urls import path

from webapp.projects import stats_views, views

app_name = "projects"
urlpatterns = [
    path("", views.project_list, name="list"),
    path("new/", views.project_create, name="create"),
    path("curators/", stats_views.curator_stats, name="curator-stats"),
    path("<slug:slug>/", views.project_detail, name="detail"),
    path("<slug:slug>/settings/", views.project_settings, name="settings"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/members/<int:pk>/remove/", views.remove_member, name="remove-member"),
    path("<slug:slug>/assign/", views.assign, name="assign"),
    path("<slug:slug>/assignments/<int:pk>/remove/", views.remove_assignment, name="remove-assignment"),
    path("<slug:slug>/assignments/<int:pk>/done/", views.mark_done, name="mark-done"),
    path("<slug:slug>/queue/", views.my_queue, name="queue"),
    path("<slug:slug>/stats/", stats_views.project_stats, name="stats"),
    path("<slug:slug>/agreement/", views.agreement, name="agreement"),
    path("<slug:slug>/adjudicate/", views.adjudication_list, name="adjudication"),
    path("<slug:slug>/adjudicate/<int:pk>/", views.adjudicate_document, name="adjudicate"),
    path("<slug:slug>/adjudicate/<int:pk>/resolve/", views.resolve, name="resolve"),
    path("<slug:slug>/adjudicate/<int:pk>/concepts/", views.concept_search, name="concept-search"),
]

"""The team workflow's addresses, under /projects/ in the "projects" namespace with the project pages
(webapp.urls): included after webapp.projects.urls, whose "new/" the overview's "<slug>/" would otherwise take."""

from django.urls import path

from webapp.teamwork import adjudication_views, stats_views, views

urlpatterns = [
    path("curators/", stats_views.curator_stats, name="curator-stats"),
    path("<slug:slug>/", views.project_detail, name="detail"),
    path("<slug:slug>/assign/", views.assign, name="assign"),
    path("<slug:slug>/assignments/<int:pk>/remove/", views.remove_assignment, name="remove-assignment"),
    path("<slug:slug>/assignments/<int:pk>/done/", views.mark_done, name="mark-done"),
    path("<slug:slug>/queue/", views.my_queue, name="queue"),
    path("<slug:slug>/stats/", stats_views.project_stats, name="stats"),
    path("<slug:slug>/agreement/", views.agreement, name="agreement"),
    path("<slug:slug>/adjudicate/", adjudication_views.adjudication_list, name="adjudication"),
    path("<slug:slug>/adjudicate/<int:pk>/", adjudication_views.adjudicate_document, name="adjudicate"),
    path("<slug:slug>/adjudicate/<int:pk>/resolve/", adjudication_views.resolve, name="resolve"),
    path("<slug:slug>/adjudicate/<int:pk>/concepts/", adjudication_views.concept_search, name="concept-search"),
]

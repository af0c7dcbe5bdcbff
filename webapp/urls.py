from django.contrib import admin
from django.urls import include, path

from webapp.core import views as core_views

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("imports/", core_views.import_jobs, name="import-jobs"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("dictionaries/", include("webapp.vocab.urls")),
    path("collections/", include("webapp.corpus.urls")),
    path("curate/", include("webapp.curation.urls")),
    path("training/", include("webapp.training.urls")),
    path("api/", include("webapp.api.urls")),
]

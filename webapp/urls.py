from django.contrib import admin
from django.urls import include, path

from webapp.core import help as core_help
from webapp.core import views as core_views
from webapp.curation import collection_views
from webapp.imports import views as imports_views
from webapp.ops import metrics_view
from webapp.projects import urls as projects_urls
from webapp.projects.dashboard import home
from webapp.sso import views as sso_views
from webapp.teamwork import urls as teamwork_urls
from webapp.training import project_dashboard, release_views
from webapp.vocab import urls as vocab_urls

urlpatterns = [
    path("", home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("help/", core_help.help_page, name="help"),  # the documentation site (webapp/core/help.py)
    path("help/<path:path>", core_help.help_page, name="help-page"),
    path("metrics", metrics_view.metrics, name="metrics"),  # Prometheus: a bearer token or an admin (docs/metrics.md)
    path("jobs/", include("webapp.jobs.urls")),
    path("audit/", include("webapp.audit.urls")),
    path("imports/", imports_views.import_jobs, name="import-jobs"),
    path("imports/dictionary/", imports_views.dictionary_import, name="import-dictionary"),
    path("imports/documents/", imports_views.documents_import, name="import-documents"),
    path("imports/text/", imports_views.text_import, name="import-text"),
    # Before Django's own: the login page with single sign-on, and the logout that ends the provider's session too.
    path("accounts/login/", sso_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", sso_views.logout, name="logout"),
    path("oidc/authenticate/", sso_views.AuthenticateView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", sso_views.CallbackView.as_view(), name="oidc_authentication_callback"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("people/", include("webapp.people.urls")),  # users, roles, invitations; API tokens
    # A dictionary's releases page is training's (it reads the carry-over and index builds): the same namespace.
    path("dictionaries/", include((vocab_urls.urlpatterns + release_views.urlpatterns, "vocab"))),
    # The collection pages are curation's (they filter by project and ask serving): the corpus namespace still.
    path("collections/", include((collection_views.urlpatterns, "corpus"))),
    path("curate/", include("webapp.curation.urls")),
    # A project's own pages are projects'; the team's work on it builds on curation and is teamwork's: one namespace.
    # Its dashboard reads evaluations too, so it is training's, in the same namespace.
    path("projects/", include((projects_urls.urlpatterns + teamwork_urls.urlpatterns + project_dashboard.urlpatterns,
                               "projects"))),
    path("training/", include("webapp.training.urls")),
    path("api/", include("webapp.api.urls")),
]

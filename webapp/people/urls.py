from django.urls import path

from webapp.people import views

app_name = "people"
urlpatterns = [
    path("", views.users, name="users"),
    path("new/", views.user_create, name="create"),
    path("members/", views.member_add, name="add-member"),
    path("<int:pk>/role/", views.user_role, name="role"),
    path("<int:pk>/active/", views.user_active, name="active"),
    path("<int:pk>/invite/", views.user_invite, name="invite"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="revoke-token"),
]

from django.apps import AppConfig


class PeopleConfig(AppConfig):
    name = "webapp.people"
    label = "people"
    verbose_name = "People and API tokens"
    default_auto_field = "django.db.models.BigAutoField"

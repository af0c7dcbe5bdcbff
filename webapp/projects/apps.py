from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "webapp.projects"
    label = "projects"
    verbose_name = "Team curation projects"

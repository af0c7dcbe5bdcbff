"""The users page's and the tokens page's forms."""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.utils import timezone

from webapp.core.roles import ROLES
from webapp.projects.models import Member, Project

ROLE_CHOICES = [(role, role) for role in ROLES]


class UserCreateForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name")
    email = forms.EmailField(label="E-mail", required=False,
                             help_text="The invitation (a link to set a password) goes here.")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="curator")
    invite = forms.BooleanField(required=False, initial=True, label="Send an invitation e-mail now")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("invite") and not data.get("email"):
            self.add_error("email", "an invitation needs an e-mail address")
        return data


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name")
    project = forms.ModelChoiceField(queryset=Project.objects.none(), to_field_name="slug")
    role = forms.ChoiceField(choices=Member.Role.choices)

    def __init__(self, *args: Any, projects: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects  # type: ignore[attr-defined]

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"no user is called {name!r}")
        return user


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. the pipeline that uses it.")
    expires = forms.DateField(required=False, label="Expires on", widget=forms.DateInput(attrs={"type": "date"}),
                              help_text="Empty: the default expiry.")
    never_expires = forms.BooleanField(required=False, label="Never expires")
    read_only = forms.BooleanField(required=False, label="Read-only (GET only)")
    project = forms.ModelChoiceField(queryset=Project.objects.none(), required=False, to_field_name="slug",
                                     empty_label="every project I may see", label="Only project")

    def __init__(self, *args: Any, projects: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects  # type: ignore[attr-defined]

    def expiry(self) -> Any:
        """None (never), a datetime (the end of the chosen day), or ... (the default)."""
        if self.cleaned_data.get("never_expires"):
            return None
        day = self.cleaned_data.get("expires")
        if day is None:
            return ...
        return timezone.make_aware(datetime.combine(day, time.max))

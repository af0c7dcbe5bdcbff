"""DRF's token admin goes: its one plain key per user is no longer accepted (named tokens replaced it; users manage
theirs at /people/tokens/)."""

from django.contrib import admin
from rest_framework.authtoken.models import TokenProxy

if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)

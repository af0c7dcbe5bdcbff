"""The core app keeps no tables of its own beyond its roles (groups, made by its migrations)."""

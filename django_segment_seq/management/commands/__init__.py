"""manage.py commands of the app."""

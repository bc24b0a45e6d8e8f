"""Settings of a small shop using django-segment-seq; backend and test database name come from the environment."""

import os

BACKEND = os.environ.get("USERPROJECT_DB", "sqlite")
TEST_NAME = os.environ.get("USERPROJECT_TEST_NAME", f"test_userproject_{os.getpid()}")

if BACKEND == "sqlite":
    # No TEST name: Django's default in-memory test database (a shared-cache URI).
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(os.path.dirname(__file__), "unused.sqlite3"),
        }
    }
elif BACKEND == "mariadb":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "HOST": "127.0.0.1",
            "PORT": 3306,
            "USER": "root",
            "NAME": "test",
            "OPTIONS": {"charset": "utf8mb4"},
            "TEST": {"NAME": TEST_NAME, "CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    }
elif BACKEND == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": "127.0.0.1",
            "PORT": 5432,
            "USER": "postgres",
            "NAME": "postgres",
            "TEST": {"NAME": TEST_NAME},
        }
    }
else:
    raise RuntimeError(f"USERPROJECT_DB must be sqlite, mariadb or postgres, not {BACKEND!r}")

SECRET_KEY = "userproject-tests-only"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django_segment_seq", "orders"]
TEST_RUNNER = "django_segment_seq.testing.DiscoverRunner"
if os.environ.get("USERPROJECT_WITHOUT_APP"):
    # The package installed (its pytest plugin loads through its entry point) but not yet in INSTALLED_APPS.
    INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
    TEST_RUNNER = "django.test.runner.DiscoverRunner"  # the app's runner needs the app
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "usersite.urls"

"""A small project serving the ID service, run by gunicorn and uvicorn in tests/processes/test_id_service.py."""

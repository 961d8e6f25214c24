from __future__ import annotations

from io import StringIO

import yaml
from django.core.management import call_command
from rest_framework.test import APIClient


def test_openapi_schema_generates_without_warnings(db: None) -> None:
    out = StringIO()
    # --fail-on-warn turns every drf-spectacular warning into a failure.
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    paths = schema["paths"]
    for expected in [
        "/api/v1/projects/",
        "/api/v1/projects/{slug}/members/{username}/",
        "/api/v1/projects/{slug}/memories/bulk/",
        "/api/v1/projects/{slug}/memories/{memory_id}/history/",
        "/api/v1/tokens/{token_id}/revoke/",
    ]:
        assert expected in paths
    assert "bearerAuth" in schema["components"]["securitySchemes"]


def test_schema_and_docs_are_served(db: None) -> None:
    client = APIClient()
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()

"""The MCP server process of tests/integrations/mcp, for the MCP permission matrix."""

from tests.integrations.mcp.conftest import mcp_http_server  # noqa: F401 — a fixture

"""The MCP server: meow-memory's tools, memories as memory:// resources and the injection
payloads as prompts, over streamable HTTP (/mcp, in the web process) and stdio
(`manage.py mcp_stdio`). Built on the services and selectors the REST API uses."""

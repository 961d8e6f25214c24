from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "memoryhub.integrations.mcp"
    label = "integrations_mcp"  # "mcp" would read like the SDK's package
    verbose_name = "MCP server"

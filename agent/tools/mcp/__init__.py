"""Tools from MCP servers: the server entries, a connection per server, the tool adapter."""

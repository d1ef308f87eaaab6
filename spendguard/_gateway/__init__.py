"""The gateway: the choke point behind a local HTTP server, for programs that are not Python."""

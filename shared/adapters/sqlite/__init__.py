"""The embedded store on SQLite: its schema migrations (and, as it is split, its ports)."""

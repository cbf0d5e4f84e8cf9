"""Adapters of the ports: MongoDB and SQS for production, SQLite for the embedded mode."""

"""The HTTP API: validates schedules and puts them on queue 1."""

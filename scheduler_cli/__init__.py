"""The ``scheduler`` command: run the service embedded, or one component on real backends."""

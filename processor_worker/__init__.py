"""Queue 1 → the store: applies schedule definitions in revision order."""

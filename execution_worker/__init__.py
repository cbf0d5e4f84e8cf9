"""Queue 2 → the webhook: holds each occurrence until its moment, fires it, records the run."""

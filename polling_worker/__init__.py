"""The store → queue 2: claims due schedules and enqueues their occurrences."""

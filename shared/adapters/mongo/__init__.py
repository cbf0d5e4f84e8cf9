"""The production store on MongoDB: its versioned indexes (and, as it is split, its ports)."""

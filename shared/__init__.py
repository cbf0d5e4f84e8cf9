"""What the four scheduler processes share: the domain, the ports and their adapters."""

"""Long-term memory at work in an agent: the manager, its model tools and prompt injection."""

"""Short-term memory: each session's conversation, trimmed to fit the model."""

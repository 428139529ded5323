"""Private helpers shared by the layers above; nothing here is public API."""

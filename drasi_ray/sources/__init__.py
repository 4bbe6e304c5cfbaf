"""Sources: where change events come from."""

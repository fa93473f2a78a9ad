"""Reports: renderings of the decision record (they never re-decide policy)."""

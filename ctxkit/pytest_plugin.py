"""pytest plugin placeholder; replaced by the snapshot plugin."""

"""Vision: camera frames to sticker colours to a valid cube state."""

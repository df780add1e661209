"""minisched: a faithful re-implementation of Nova's scheduling architecture."""

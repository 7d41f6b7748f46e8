"""Broker process: XSUB/XPUB proxy, last-value cache, capture tap, statistics."""

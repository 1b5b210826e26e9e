"""rackops: provision, render, validate and accept a rack of GPU servers."""

__version__ = "0.1.0"

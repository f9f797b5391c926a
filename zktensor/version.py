"""The package's version: a leaf, so that what keys caches on it (the tuning cache) need not
import the package root."""
__version__ = "0.1.0"

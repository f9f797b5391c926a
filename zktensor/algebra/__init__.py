"""Fields and curves as data: one record each, every derived constant computed."""
from .fields import FIELD_NAMES, Field, field

__all__ = ["Field", "field", "FIELD_NAMES"]

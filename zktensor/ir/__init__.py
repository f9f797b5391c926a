"""The MLIR dialects (`field`, `ec`) and the tracer that turns a Python function over field values into IR."""

"""The one error type of the format layer."""


class FormatError(ValueError):
    """A file is truncated, corrupt, or does not match the files it is used with.

    The message starts with the file's name and says what is wrong, e.g.
    ``"circuit.zkey: section 3 truncated (expected 2048 bytes, found 100)"``.
    """

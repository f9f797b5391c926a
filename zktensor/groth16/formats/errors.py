"""The format layer's errors: a file that is not what it should be, and a witness that does
not satisfy its circuit."""


class FormatError(ValueError):
    """A file is truncated, corrupt, or does not match the files it is used with.

    The message starts with the file's name and says what is wrong, e.g.
    ``"circuit.zkey: section 3 truncated (expected 2048 bytes, found 100)"``.
    """


class WitnessError(ValueError):
    """A witness that does not satisfy the constraint system (or is malformed)."""

    def __init__(self, message: str, constraint: int | None = None):
        super().__init__(message)
        self.constraint = constraint

    @classmethod
    def unsatisfied(cls, where: str, r1cs_path, i: int, n_constraints: int) -> "WitnessError":
        """Constraint i of the .r1cs at r1cs_path fails for the witness `where`."""
        return cls(f"{where} does not satisfy the constraint system {r1cs_path}: "
                   f"constraint {i} (of {n_constraints}) fails, A·w · B·w ≠ C·w", i)

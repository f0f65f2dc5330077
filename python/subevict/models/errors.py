"""The one error type of subevict.models."""


class ModelError(ValueError):
    """Bad input to the model code (a missing or unsupported file, key, tensor or text): the
    message names the input and what was expected. Command-line entry points print it as one line
    and exit 2."""

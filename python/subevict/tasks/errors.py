"""The one error type of subevict.tasks."""

from ..models.errors import ModelError


class TaskError(ModelError):
    """Bad input to the task generator (an unknown task or haystack, a depth outside [0, 1], a
    length the task cannot fill or fit, a negative seed): the message is one line naming the input
    and what was expected. A ModelError (a ValueError), so the entry points that print ModelError
    as one line and exit 2 do the same for it."""

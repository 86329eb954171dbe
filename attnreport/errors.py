"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class AttnReportError(Exception):
    """A problem the user can fix; ``str(err)`` is the whole message, one line, with the fix."""

"""From a sweep to a target width: the transferred config (``target``) and its check by training at the
target width (``verify``)."""

"""From a sweep to a target width: the transferred config (``target``), what it warns about (``target_warnings``),
the sections computed from its config and their digest (``derived``), its batch and budget (``batch``), carried
decay and constants (``decay``, ``constants``), a trainer command's target (``trainer_target``), a table's
prediction (``imported``), the next check to run (``next_check``) and its check by training at the target width
(``verify``)."""

"""Tables of finished runs from elsewhere as run directories (``mutransfer import``): the mapping of a table's
columns (``mapping``), reading a file or an Optuna study (``source``), points and LR grids (``points``), the
conversion to this tool's trials (``convert``), the points with failed attempts beside their retries flagged on
the summary (``retried``), the run directory's record (``record``) and the whole import (``run``)."""

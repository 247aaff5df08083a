"""Sweeps logged to the user's tracker (MLflow, Weights & Biases): which one (``spec``), what it is told
(``records``, ``answer``), each library behind one interface (``backend``), bounded and never fatal (``guard``),
and a sweep's parent and trial runs (``session``)."""

from .records import SweepAnswer, TrialEnd, TrialInfo
from .session import SweepTracking, TrackerHandle, TrialTracking
from .spec import TRACKERS, TrackerSpec, parse_log_section, tracker_spec

__all__ = ["TrackerSpec", "TRACKERS", "parse_log_section", "tracker_spec", "TrialInfo", "TrialEnd", "SweepAnswer",
           "SweepTracking", "TrialTracking", "TrackerHandle"]

"""``mutransfer verify``: train the target width at η*·f for each factor f and say whether f = 1 wins."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["run"]


def run(width: int, source: Optional[Path], factors: str, setup: Optional[str], overrides: Sequence[str]) -> None:
    from ..analysis.draw import draw
    from ..files import VERIFY_FILE, latest_run
    from ..transfer.verify import parse_factors, verify

    run_dir = source or latest_run()
    parsed = parse_factors(factors)
    result = verify(run_dir, width, parsed, setup, overrides,
                    on_trial=lambda f: print(f"training width {width} at {f:g} × η*", file=sys.stderr))
    for row in result["rows"].itertuples():
        print(f"factor {row.factor:>6g}  log2 lr {row.log2_lr:7.2f}  val_loss {row.val_loss:.4f}  {row.status}")
    verdict = "wins" if result["middle_wins"] else "does not win"
    print(f"η* × {result['middle']:g} {verdict} at width {width} (margin {result['margin']:+.4f} nats over "
          f"the best other factor); appended to {run_dir / VERIFY_FILE}")
    draw([run_dir])

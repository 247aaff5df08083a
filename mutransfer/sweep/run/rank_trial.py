"""A helper rank of one sweep trial: ``python -m mutransfer.sweep.run.rank_trial CONFIG_FILE`` with torchrun's variables
set. It trains its share of the trial whose config the file holds and writes nothing; rank 0, the sweep's worker,
reports the trial (``ranked_trainer``)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]


def main(config_file: str) -> int:
    from ...config import config_from_dict
    from ...files import load_yaml
    from ...train.data import load_corpus
    from ...train.loop import train_model
    from ...dist.launch import die_with_parent
    from ...dist.ranks import join, leave

    die_with_parent()
    cfg = config_from_dict(load_yaml(Path(config_file), "trial config"))
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    ranks = join(cfg.train.device, cfg.train.parallel, cfg.train.dist_timeout)
    finished = False
    try:
        train_model(cfg, corpus, ranks=ranks)
        finished = True
    finally:
        leave(finished)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

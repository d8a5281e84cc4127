"""What several suites of one bench run read, made once per run in the run's shared
folder by the first suite that asks: the contest versions as Parquet files, and what the
suites build from them (pypaimon's table of them takes about 20 minutes at the full scale)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from merge_core import contest


@dataclass
class Inputs:
    folder: str
    base_rows: int  # the contest's base version; its 10 increments have base_rows / 5 rows each
    _made: dict[str, Any] = field(default_factory=dict, repr=False)

    def contest_versions(self) -> list[str]:
        """The base and its 10 increments (`plain/<version>.parquet`)."""
        folder = os.path.join(self.folder, "plain")
        return self.once("contest versions", lambda: contest.generate(folder, self.base_rows, 10, seed=7))

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """What `make()` returned the first time `name` was asked for in this run: the
        suites only read it."""
        if name not in self._made:
            self._made[name] = make()
        return self._made[name]

"""The store opens without alembic when it is at the newest migration: HEAD must name it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

from iowall.store import Store
from iowall.store.db import HEAD
from iowall.store.write import MIGRATIONS


def test_head_is_the_newest_migration() -> None:
    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    assert ScriptDirectory.from_config(cfg).get_heads() == [HEAD]


def test_a_store_at_head_opens_without_importing_alembic(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(str(db))  # created: migrated by alembic
    code = "import sys; from iowall.store import Store; Store(sys.argv[1]); print('alembic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(db)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert out.stdout.strip() == "False"

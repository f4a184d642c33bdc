"""The TypeScript SDK's own tests (sdk/typescript/test, `node --test`), one
pytest test per file so that the suite's workers share them: each file
starts real routers of this tree (sdk/typescript/test/router.js) on ports
from this worker's slice. scripts/setup.sh --test installs Node's packages
by the lockfile and builds the SDK first."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sdk" / "typescript"
TEST_FILES = sorted(p.name for p in (PACKAGE / "test").glob("*.test.js"))

pytestmark = pytest.mark.integration


def test_the_sdk_is_built_and_every_test_file_is_collected():
    assert (PACKAGE / "dist" / "index.js").is_file(), "sdk/typescript is not built: run scripts/setup.sh --test"
    assert len(TEST_FILES) >= 8, TEST_FILES


@pytest.mark.parametrize("test_file", TEST_FILES)
def test_node_test_file_passes(test_file: str, tmp_path: Path):
    node = shutil.which("node")
    assert node, "node is not installed: run scripts/setup.sh --test"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([node, "--test", "--test-concurrency=1", f"test/{test_file}"], cwd=PACKAGE, env=env,
                          capture_output=True, text=True, timeout=600)
    summary = [line for line in done.stdout.splitlines() if line.startswith("# ")]
    assert done.returncode == 0, f"{test_file}:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    assert any(line.startswith("# pass ") and int(line.split()[-1]) > 0 for line in summary), summary

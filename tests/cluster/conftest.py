import pytest

from meshmq.launcher import LocalCluster
from tests.fixtures.etcd import etcd_binary


class Launched:
    """Run directories of the clusters a test starts; every one is brought down at the end."""

    def __init__(self, tmp_path) -> None:
        self.tmp = tmp_path
        self.run_dirs: list = []

    def run_dir(self, name: str = "run"):
        path = self.tmp / name
        self.run_dirs.append(path)
        return path

    async def down_all(self) -> None:
        for run_dir in self.run_dirs:
            await LocalCluster.attach(run_dir).down(timeout=5)


@pytest.fixture
async def launched(tmp_path):
    etcd_binary()  # a clear failure when etcd is not installed
    tracker = Launched(tmp_path)
    yield tracker
    await tracker.down_all()

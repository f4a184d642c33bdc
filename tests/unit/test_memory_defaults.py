"""The default global-max-size: the memory the process may use (cgroup v2, v1,
or the machine's), a share of it, and what the effective configuration shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshmq.config import defaults
from meshmq.config.defaults import (
    MemoryLimit,
    cgroup_memory_limit,
    default_global_max_size,
    effective_global_max_size,
    parse_memory_size,
    process_memory_limit,
)
from meshmq.config.loader import ConfigError, effective_config_yaml, load_config_text

MiB = 1024 * 1024
GiB = 1024 * MiB
V1_UNLIMITED = "9223372036854771712"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_cgroup_v2_memory_max_of_the_process_group(tmp_path):
    write(tmp_path, "system.slice/app.service/memory.max", str(512 * MiB))
    assert cgroup_memory_limit("0::/system.slice/app.service\n", tmp_path) == 512 * MiB


def test_cgroup_v2_max_means_no_limit(tmp_path):
    write(tmp_path, "app/memory.max", "max")
    assert cgroup_memory_limit("0::/app\n", tmp_path) is None


def test_cgroup_v2_a_parent_limit_applies_to_its_children(tmp_path):
    write(tmp_path, "parent/memory.max", str(256 * MiB))
    write(tmp_path, "parent/child/memory.max", "max")
    assert cgroup_memory_limit("0::/parent/child\n", tmp_path) == 256 * MiB


def test_cgroup_v2_inside_a_container_reads_the_namespace_root(tmp_path):
    write(tmp_path, "memory.max", str(GiB))  # the container's own cgroup, mounted as the root; "0::/" listed
    assert cgroup_memory_limit("0::/\n", tmp_path) == GiB


def test_cgroup_v1_memory_controller(tmp_path):
    text = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n"
    write(tmp_path, "memory/docker/abc/memory.limit_in_bytes", str(768 * MiB))
    write(tmp_path, "memory/memory.limit_in_bytes", V1_UNLIMITED)
    assert cgroup_memory_limit(text, tmp_path) == 768 * MiB


def test_cgroup_v1_unlimited_is_no_limit(tmp_path):
    write(tmp_path, "memory/process_api/x/memory.limit_in_bytes", V1_UNLIMITED)
    write(tmp_path, "memory/memory.limit_in_bytes", V1_UNLIMITED)
    assert cgroup_memory_limit("4:memory:/process_api/x\n0::/\n", tmp_path) is None


def test_cgroup_v1_path_not_mounted_in_the_container_falls_back_to_the_controller_root(tmp_path):
    write(tmp_path, "memory/memory.limit_in_bytes", str(2 * GiB))
    assert cgroup_memory_limit("9:memory:/kubepods/pod1/c2\n", tmp_path) == 2 * GiB


def test_hybrid_v1_and_v2_take_the_lowest(tmp_path):
    write(tmp_path, "memory/a/memory.limit_in_bytes", str(GiB))
    write(tmp_path, "a/memory.max", str(300 * MiB))
    assert cgroup_memory_limit("4:memory:/a\n0::/a\n", tmp_path) == 300 * MiB


def test_no_cgroup_files_at_all(tmp_path):
    assert cgroup_memory_limit("0::/nowhere\n4:memory:/nowhere\n", tmp_path) is None
    assert cgroup_memory_limit("", tmp_path) is None


def test_process_limit_is_the_cgroup_when_below_physical_memory(tmp_path):
    (tmp_path / "cgroup").write_text("0::/app\n")
    write(tmp_path / "fs", "app/memory.max", str(GiB))
    got = process_memory_limit({}, tmp_path / "cgroup", tmp_path / "fs", physical=24 * GiB)
    assert got == MemoryLimit(GiB, "cgroup limit")
    got = process_memory_limit({}, tmp_path / "cgroup", tmp_path / "fs", physical=512 * MiB)
    assert got == MemoryLimit(512 * MiB, "physical memory")


def test_process_limit_without_cgroup_is_physical_memory(tmp_path):
    got = process_memory_limit({}, tmp_path / "missing", tmp_path, physical=8 * GiB)
    assert got == MemoryLimit(8 * GiB, "physical memory")


def test_the_environment_variable_overrides_everything(tmp_path):
    (tmp_path / "cgroup").write_text("0::/app\n")
    write(tmp_path / "fs", "app/memory.max", str(GiB))
    env = {"MESHMQ_MEMORY_LIMIT": "64M"}
    assert process_memory_limit(env, tmp_path / "cgroup", tmp_path / "fs", physical=GiB) == MemoryLimit(
        64 * MiB, "MESHMQ_MEMORY_LIMIT")
    with pytest.raises(ValueError, match="MESHMQ_MEMORY_LIMIT: 'plenty' is not a size"):
        process_memory_limit({"MESHMQ_MEMORY_LIMIT": "plenty"}, tmp_path / "cgroup", tmp_path / "fs")


@pytest.mark.parametrize("text, value", [("1048576", MiB), ("512M", 512 * MiB), ("512MiB", 512 * MiB),
                                         ("2g", 2 * GiB), ("64K", 64 * 1024), ("3GB", 3 * GiB)])
def test_parse_memory_size(text, value):
    assert parse_memory_size(text) == value


@pytest.mark.parametrize("text", ["", "M", "-1", "1.5G", "12T", "lots"])
def test_parse_memory_size_refuses(text):
    with pytest.raises(ValueError):
        parse_memory_size(text)


def test_the_default_is_a_share_of_memory_capped():
    assert default_global_max_size(24 * GiB) == defaults.GLOBAL_MAX_SIZE_CAP == 100 * MiB
    assert default_global_max_size(512 * MiB) == 64 * MiB  # an eighth, as Artemis ends up with
    assert default_global_max_size(16 * MiB) == 2 * MiB


def test_effective_global_max_size():
    small = MemoryLimit(256 * MiB, "cgroup limit")
    assert effective_global_max_size(10 * MiB, small).bytes == 10 * MiB
    assert effective_global_max_size(0, small).bytes == 0
    left_out = effective_global_max_size(None, small)
    assert left_out.bytes == 32 * MiB
    assert left_out.why == "not set: the smaller of 100 MiB and 1/8 of 256 MiB (cgroup limit)"
    # -1 keeps its documented meaning: half of the machine's memory.
    assert effective_global_max_size(-1, small).bytes == defaults.physical_memory() // 2


def test_a_config_without_the_key_leaves_it_to_the_computed_default(monkeypatch):
    monkeypatch.setenv("MESHMQ_MEMORY_LIMIT", "256M")
    cfg = load_config_text("name: n\n")
    assert cfg.global_max_size is None
    assert "global-max-size: null" in effective_config_yaml(cfg)  # as the file says: written back unchanged
    shown = effective_config_yaml(cfg, computed=True)
    assert f"global-max-size: {32 * MiB}  # not set: the smaller of 100 MiB and 1/8 of 256 MiB" in shown
    assert load_config_text("name: n\nglobal-max-size: null\n").global_max_size is None
    assert load_config_text("name: n\nglobal-max-size: 512M\n").global_max_size == 512 * MiB
    assert load_config_text("name: n\nglobal-max-size: -1\n").global_max_size == -1


def test_a_malformed_global_max_size_names_the_key_and_line():
    with pytest.raises(ConfigError) as err:
        load_config_text("name: n\nglobal-max-size: half\n")
    assert "global-max-size" in str(err.value) and ":2:" in str(err.value)
    assert "'half' is not a size" in str(err.value)
    with pytest.raises(ConfigError, match="global-max-size"):
        load_config_text("name: n\nglobal-max-size: -2\n")

"""The committed stubs under meshmq/v1 are exactly what proto/ generates."""

from pathlib import Path

from meshmq.protogen import generate

ROOT = Path(__file__).resolve().parents[2]


def test_generated_stubs_match_proto(tmp_path):
    generated = generate(ROOT / "proto", tmp_path)
    assert generated, "protoc generated nothing"
    names = set()
    for path in generated:
        rel = path.relative_to(tmp_path)
        names.add(rel)
        committed = ROOT / rel
        assert committed.exists(), f"{rel} is generated but not committed: run scripts/gen_protos.py"
        assert committed.read_text() == path.read_text(), f"{rel} differs from proto/: run scripts/gen_protos.py"
    committed_all = {p.relative_to(ROOT) for p in (ROOT / "meshmq" / "v1").iterdir() if p.suffix in {".py", ".pyi"}}
    assert committed_all == names, f"stale stubs: {sorted(map(str, committed_all - names))}"

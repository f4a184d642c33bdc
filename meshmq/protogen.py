"""Generate Python stubs from proto/ with grpc_tools (a dev dependency)."""

from __future__ import annotations

from pathlib import Path


def generate(proto_root: Path, out_dir: Path) -> list[Path]:
    """Run protoc over every .proto under proto_root, writing into out_dir.

    Returns the generated files. `meshmq/v1/__init__.py` is written too so the
    generated folder is an importable package on its own.
    """
    from grpc_tools import protoc  # imported here: only needed at build time
    import grpc_tools

    protos = sorted(str(p.relative_to(proto_root)) for p in proto_root.rglob("*.proto"))
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{proto_root}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")
    pkg_dirs = {out_dir / Path(p).parent for p in protos}
    for d in pkg_dirs:
        init = d / "__init__.py"
        init.write_text('"""Generated from proto/ by scripts/gen_protos.py; do not edit."""\n')
    return sorted(f for d in pkg_dirs for f in d.iterdir() if f.suffix in {".py", ".pyi"})

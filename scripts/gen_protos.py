"""Regenerate the Python stubs under meshmq/v1 from proto/meshmq/v1/*.proto.

Usage: python scripts/gen_protos.py [OUT_DIR]   (OUT_DIR defaults to the repo root)
The test tests/unit/test_generated_stubs.py runs this into a temporary dir and
compares, so the committed stubs can never drift from proto/.
"""

from __future__ import annotations

import sys
from pathlib import Path

from meshmq.protogen import generate

if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root
    for path in generate(root / "proto", out):
        print(path)

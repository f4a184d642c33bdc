"""Generated from proto/ by scripts/gen_protos.py; do not edit."""

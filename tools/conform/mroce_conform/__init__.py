"""MetaRoCE black-box compliance suite (docs/COMPLIANCE.md).

Written from docs/SPEC.md alone: nothing here reads or imports the implementation."""

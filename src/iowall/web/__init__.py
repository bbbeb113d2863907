"""The dashboard (`iowall serve`): a read-only web face on the store (docs/dashboard.md)."""

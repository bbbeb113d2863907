"""Bundles: runs in files, versioned JSON (plain, schema 2) and packed (schema 3, the
store's rows), read and checked on every CPU for ``iowall import`` and written by ``iowall
export``. Reading needs no SQLAlchemy; the database these files go to and come from is
``iowall.store`` (its ``ingest`` writes what ``pool`` reads) (docs/bundle-format.md)."""

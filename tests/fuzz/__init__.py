"""Property-based fuzzers of what users hand iowall: plan files, bundles, run selections.

One module per input, each driving the real CLI in-process (``iowall.cli.main.main``) with
generated inputs: 1,000 each in `make test`, 10,000 in `make fuzz`; the fio JSON importer's
is ``test_fio_json_fuzz.py``, with the same harness (``harness.py``) and three properties."""

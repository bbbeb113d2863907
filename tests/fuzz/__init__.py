"""Property-based fuzzers of what users hand iowall: plan files, bundles, run selections.

One module per input, each driving the real CLI in-process (``iowall.cli.main.main``) with
10,000 generated inputs. The fio JSON importer (issue #15) gets its own ``test_fio_json.py``
here when it exists, with the same harness (``harness.py``) and the same three properties."""

"""Where the package's build puts the C engine, ``iowall-engine`` (setup.py). A package, not a
bare directory, so that setuptools installs it with the rest: as a directory of data it
printed a 30-line deprecation warning ("Package 'iowall._bin' is absent from the packages
configuration") on every install."""

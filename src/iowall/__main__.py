"""python -m iowall"""

from .cli.main import entry

entry()

"""``python -m kernelpro.cli``."""

from kernelpro.cli.main import main

main()

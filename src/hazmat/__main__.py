"""`python -m hazmat`: the same as the `hazmat` command."""

import sys

from hazmat.cli import main

sys.exit(main())

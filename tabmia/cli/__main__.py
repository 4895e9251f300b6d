"""``python -m tabmia.cli``: the ``tabmia`` command."""

import sys

from tabmia.cli import main

sys.exit(main())

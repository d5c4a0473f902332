"""`python -m wirekafka` is the `wirekafka` command."""

import sys

from wirekafka.cli import main

sys.exit(main())

import sys

from ingot.cli import main

sys.exit(main())

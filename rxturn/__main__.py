import sys

from rxturn.cli import main

sys.exit(main())

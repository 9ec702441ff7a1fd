import sys

from rxturn._entry import main  # first: SIGTERM is handled from here on (see rxturn._entry)

sys.exit(main())

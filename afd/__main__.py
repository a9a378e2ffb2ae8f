import sys

from afd.cli.main import main

sys.exit(main())

import sys

from memoryhub_agent.cli import main

sys.exit(main())

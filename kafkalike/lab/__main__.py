"""python -m kafkalike.lab: the lab's command line (bin/kafkalike-lab.sh)."""
import sys

from kafkalike.lab.cli import main

sys.exit(main())

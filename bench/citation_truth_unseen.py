"""Citation truth on the `unseen` set: `bench/citation_truth.py --set unseen` (documents and questions no
other set uses: tests/real_documents/unseen/). Results: bench/results/citation_truth_unseen.json.

    python bench/citation_truth_unseen.py [--baseline-ref REF]   # REF's citation package beside ours
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.citation_truth import main

if __name__ == "__main__":
    args = ["--baseline" if a == "--baseline-ref" else a for a in sys.argv[1:]]
    sys.argv[1:] = ["--set", "unseen", *args]
    main()

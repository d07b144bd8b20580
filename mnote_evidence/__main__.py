"""`python -m mnote_evidence ...` is the `mnote-evidence` command."""

from mnote_evidence.build.cli.main import main

if __name__ == "__main__":
    main(prog_name="mnote-evidence")

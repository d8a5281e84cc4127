"""The merge-core command line (filled in below)."""


def main() -> int:
    return 0

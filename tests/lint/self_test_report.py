# SPDX-License-Identifier: Apache-2.0
"""The verdict of a lint's self-test: which planted violations it missed,
which clean lines it flagged."""


def report(planted: int, missed: list, false_alarms: list) -> int:
    """Prints what went wrong and a summary; 0 when every planted violation
    was found and nothing clean was flagged, 1 otherwise."""
    for miss in missed:
        print(f"not found: {miss}")
    for alarm in false_alarms:
        print(f"false alarm: {alarm}")
    print(f"{planted} planted violations, {planted - len(missed)} found; "
          f"{len(false_alarms)} false alarms")
    return 1 if missed or false_alarms else 0

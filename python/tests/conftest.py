"""pytest hooks: the case counts of the property tests in the summary."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    import sys

    for name in ("test_properties", "test_metamorphic"):
        module = sys.modules.get(name) or sys.modules.get(f"tests.{name}")
        counts = getattr(module, "OUTCOMES", None)
        if not counts:
            continue
        terminalreporter.write_sep("-", f"{name}: cases")
        for function, outcomes in sorted(counts.items()):
            total = sum(outcomes.values())
            parts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
            terminalreporter.write_line(f"{function}: {total} cases ({parts})")

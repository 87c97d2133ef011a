"""suite.html's tables: each in a box of its own that scrolls sideways, so the page stays as wide as the window."""

from __future__ import annotations

import re

from kernelpro.suite.report import write_suite_report
from tests.suite.helpers import ledger_with, run_summary


def test_every_table_of_the_suite_page_scrolls_inside_its_own_box(tmp_path):
    paths, ledger = ledger_with(tmp_path, {f"level1/{i}_a_rather_long_problem_name_{'x' * 40}":
                                           {"level": 1, "result": run_summary(True, 1.5)} for i in range(1, 3)})
    page = write_suite_report(paths, ledger)[0].read_text()
    style = page[page.index("<style>"):page.index("</style>")]
    rule = re.search(r"\.wide \{([^}]*)\}", style)
    assert rule and "overflow-x: auto" in rule.group(1)
    tables = page.count("<table>")
    assert tables >= 3 and page.count('<div class="wide"><table>') == tables
    problems = page[page.index("<h2>Problems</h2>"):]
    assert problems.split("\n")[1].startswith('<div class="wide"><table><tr><th>problem</th>')

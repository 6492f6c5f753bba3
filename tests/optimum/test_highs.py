"""HiGHS must not print on stdout: the CLI's --json output is parsed by programs."""

from __future__ import annotations

import subprocess
import sys


def test_first_highs_instance_prints_nothing_on_stdout():
    code = ("from topocoll.optimum.highs import quiet_highs\n"
            "h = quiet_highs(); print('after', h.getOptionValue('output_flag')[1])\n"
            "import highspy; highspy.Highs()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == "after False\n"


def test_timed_lp_leaves_json_output_clean():
    code = ("import json\n"
            "from topocoll.topology import parse_spec\n"
            "from topocoll.selection import find_algorithm\n"
            "s = find_algorithm('optimal', 'allgather')(parse_spec('hypercube:3'),"
            " pipeline='timed', steps=3)\n"
            "print(json.dumps({'steps': s.num_steps}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().startswith("{") and out.count("\n") == 1

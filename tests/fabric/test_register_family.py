"""Adding a fabric family or design method is its functions plus one register_family call:
``design_fabrics`` at every question, ``topocoll design`` and its errors take it, and it
returns the same Design record as the built-ins (docs/architecture.md, "Where to add")."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.errors import InputError
from topocoll.fabric import (
    Family,
    design_fabrics,
    family_bill,
    family_names,
    register_family,
    unregister_family,
)
from topocoll.fabric.design import DesignJob
from topocoll.topology.generators import star
from topocoll.workload import find_device, parse_model

SMALL = "transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000"


def _topology(box, gpus, rate, *, oversubscription=1.0, radix=64, block=None):
    return star(gpus, bandwidth=rate, name=f"one-switch:{gpus}")


def _parts(box, gpus, rate, *, oversubscription=1.0, radix=64):
    # a NIC, a cable (two transceivers, a fiber) and a switch port per GPU
    return [("nic", gpus, rate), ("transceiver", 2 * gpus, rate), ("fiber", gpus, 0.0),
            ("switch_port", gpus, rate)]


@pytest.fixture
def one_switch():
    fam = register_family(Family("one-switch", "every GPU on one non-blocking switch, no "
                                 "scale-up domain", _topology, _parts, scaleup=False))
    yield fam
    unregister_family("one-switch")


def test_a_registered_family_is_designed_like_the_built_ins(one_switch):
    from topocoll.fabric import PriceTable
    from topocoll.topology.boxes import find_box

    assert family_names()[-1] == "one-switch"
    job = DesignJob(parse_model(SMALL), 32, find_device("h100"), 64)
    res = design_fabrics(job, families=["one-switch", "rail"], budget=4e5, bounds=False,
                         recheck=False)
    mine, rail = res.designs
    assert mine.family == "one-switch" and mine.feasible and mine.parallel
    assert mine.topology.startswith("one-switch:32")
    assert abs(mine.bill.cost_usd - 4e5) <= 1e-6 * 4e5          # the rate solved for it
    assert mine.bill.cost_usd == family_bill("one-switch", find_box("dgx-h100"), 32,
                                             mine.rate_Bps, PriceTable()).cost_usd
    assert "scaleup_port" not in {line[0] for line in mine.bill.lines}
    assert mine.iteration_s > 0 and rail.iteration_s > 0
    # the other questions reach it too
    at = design_fabrics(job, families=["one-switch"], rate=50e9, bounds=False,
                        recheck=False)
    assert at.designs[0].rate_Bps == 50e9 and at.designs[0].feasible


def test_the_command_line_takes_a_registered_family(one_switch):
    r = CliRunner().invoke(app, ["design", "-m", SMALL, "--gpus", "32", "--global-batch",
                                 "64", "--no-bounds", "--no-recheck", "--families",
                                 "one-switch,rail", "--budget", "$400k", "--json"])
    assert r.exit_code == 0, r.output
    fams = [x["family"] for x in json.loads(r.stdout)["designs"]]
    assert fams == ["one-switch", "rail"]


def test_registration_is_checked_and_undone():
    with pytest.raises(InputError, match="registered already"):
        register_family(Family("rail", "", _topology, _parts))
    with pytest.raises(InputError, match="built-in"):
        unregister_family("rail")
    assert "one-switch" not in family_names()
    r = CliRunner().invoke(app, ["design", "-m", SMALL, "--gpus", "32", "--families",
                                 "one-switch"])
    assert r.exit_code == 2 and "one-switch" in r.stderr

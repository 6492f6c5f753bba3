"""The price table, fat-tree and direct-connect costs, the cost-equivalent bandwidth."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError, TopologyError
from topocoll.fabric import (
    PriceTable,
    equivalent_fattree_bandwidth,
    fattree_cost,
    fattree_tiers,
    read_price_table,
    topoopt_cost,
)

G = 1e9 / 8


def test_interpolation_is_exact_at_the_table_and_increasing():
    p = PriceTable()
    assert p.price("transceiver", 100 * G) == 99
    assert p.price("transceiver", 70 * G) == pytest.approx(49 + (99 - 49) * 30 / 60)
    assert p.price("nic", 5 * G) == pytest.approx(30)            # proportional below
    assert p.price("nic", 1600 * G) == pytest.approx(1800 + 800 * 800 / 400)
    xs = [p.price("switch_port", b * G) for b in range(1, 2000, 7)]
    assert all(a < b for a, b in zip(xs, xs[1:], strict=False))


def test_fattree_counts_and_topoopt_cost():
    assert [fattree_tiers(n, 64) for n in (64, 65, 2048, 2049)] == [1, 2, 2, 3]
    p = PriceTable()
    # two tiers: NIC + 3 transceivers + 3 switch ports + 2 fibers per server
    assert fattree_cost(128, 100 * G, p) == pytest.approx(128 * (300 + 3 * (99 + 200) + 20))
    assert topoopt_cost(128, 4, 100 * G, p) == pytest.approx(128 * 4 * (300 + 99 + 100 + 5))
    # three tiers: 5 and 5; oversubscribed 4:1 above the edge: 1 + 2 x 2 / 4 ends
    assert fattree_cost(4096, 100 * G, p) == pytest.approx(4096 * (300 + 5 * 299 + 30))
    assert fattree_cost(4096, 100 * G, p, oversubscription=4) == pytest.approx(
        4096 * (300 + 2 * 299 + 10 + 2 * 10 / 4))
    with pytest.raises(InputError):
        fattree_cost(16, G, p, oversubscription=0.5)
    assert topoopt_cost(128, 4, 100 * G, p, ocs=True) > topoopt_cost(128, 4, 100 * G, p)


@pytest.mark.parametrize("d, gbps", [(4, 10), (4, 100), (8, 200), (6, 40)])
def test_equivalent_bandwidth_inverts_the_cost(d, gbps):
    c = topoopt_cost(128, d, gbps * G)
    b = equivalent_fattree_bandwidth(128, c)
    assert fattree_cost(128, b) == pytest.approx(c, rel=1e-9)
    assert fattree_cost(128, b * 0.99) < c


def test_price_file(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("transceiver: {100: 500}\npatch_panel_port: 50\n")
    p = read_price_table(str(f))
    assert p.price("transceiver", 100 * G) == 500 and p.patch_panel_port == 50
    f.write_text("laser: 3\n")
    with pytest.raises(InputError) as e:
        read_price_table(str(f))
    assert e.value.item == "laser"
    f.write_text("nic: 3\n")
    with pytest.raises(InputError) as e:
        read_price_table(str(f))
    assert e.value.item == "nic"
    with pytest.raises(TopologyError):
        read_price_table(str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError):
        PriceTable(nic={})


def test_the_packaged_table_has_power_and_a_source_for_every_part():
    from topocoll.fabric import PARTS

    p = PriceTable()
    for part in PARTS:
        assert p.sources[part].strip()
        assert p.power(part, 400 * G) >= 0 and p.price(part, 400 * G) >= 0
    # NVIDIA's 400G transceiver specification: 8 W typical
    assert p.power("transceiver", 400 * G) == 8.0
    assert p.power("ocs_port") == pytest.approx(0.8)


def test_price_file_with_power_and_sources(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("switch_port:\n  usd: {400: 900}\n  watts: {400: 20}\n  source: our quote\n"
                 "ocs_port: {usd: 300}\n")
    p = read_price_table(str(f))
    assert p.price("switch_port", 400 * G) == 900 and p.power("switch_port", 400 * G) == 20
    assert p.sources["switch_port"] == "our quote" and p.ocs_port == 300
    assert p.power("ocs_port") == pytest.approx(0.8)          # kept from the defaults
    for bad, item in (("nic: null\n", "nic"), ("fiber: {usd: null}\n", "fiber"),
                      ("nic: {usd: 5}\n", "nic"), ("dac: {cost: 3}\n", "dac")):
        f.write_text(bad)
        with pytest.raises(InputError) as e:
            read_price_table(str(f))
        assert item in str(e.value)

import pytest

from topocoll.units import (
    GB,
    GBps,
    Gbps,
    GiB,
    KiB,
    MiB,
    UnitError,
    format_rate,
    format_size,
    format_time,
    parse_rate,
    parse_size,
    parse_time,
    us,
)


@pytest.mark.parametrize("text,value", [
    ("400Gbps", 400 * Gbps), ("400Gb/s", 50e9), ("50GB/s", 50 * GBps), ("50GBps", 50e9),
    ("1GiB/s", 2**30), ("100Mbps", 12.5e6), ("1.5TB/s", 1.5e12), ("8b/s", 1.0), (25e9, 25e9),
])
def test_parse_rate(text, value):
    assert parse_rate(text) == value


@pytest.mark.parametrize("text,value", [
    ("1MiB", MiB), ("64MiB", 64 * 2**20), ("1GB", GB), ("1GiB", GiB), ("32B", 32), ("1KiB", KiB),
    ("1kB", 1000), ("8Kb", 1000), ("0", 0), (4096, 4096), ("1.5KiB", 1536), ("3e3", 3000),
])
def test_parse_size_exact_prefixes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text,value", [
    ("500ns", 5e-7), ("2us", 2 * us), ("1.5us", 1.5e-6), ("1ms", 1e-3), ("3", 3.0),
    ("100 ns", 1e-7),
])
def test_parse_time(text, value):
    assert parse_time(text) == pytest.approx(value, rel=0, abs=0)


def test_decimal_fraction_is_exact():
    # 0.1 GB is exactly 1e8 bytes: parsed as a fraction, rounded once
    assert parse_size("0.1GB") == 100_000_000.0
    assert parse_rate("0.3Gbps") == 37_500_000.0


@pytest.mark.parametrize("bad", ["fast", "10 parsecs", "-1GB", "", "1XB"])
def test_bad_sizes_name_the_text(bad):
    with pytest.raises(UnitError) as e:
        parse_size(bad)
    assert e.value.text == bad
    assert repr(bad) in str(e.value) or "must be" in str(e.value)


@pytest.mark.parametrize("bad", ["0Gbps", "-5GB/s", "10GB", True])
def test_bad_rates(bad):
    with pytest.raises(UnitError):
        parse_rate(bad)


def test_format_round_trip():
    assert format_size(64 * MiB) == "64MiB"
    assert format_rate(50e9) == "50GB/s"
    assert format_time(2.5e-6) == "2.5us"
    assert parse_size(format_size(3 * MiB)) == 3 * MiB



def test_npz_is_the_same_bytes_every_time_and_loads(tmp_path):
    """No clock in a schedule file: two writes of one schedule are byte-identical (zip
    members carry a fixed date), at either deflate level, and load back equal."""
    import time

    from topocoll.schedule import load_schedule, save_schedule
    from topocoll.synth import ring_allreduce
    from topocoll.topology import ring

    s = ring_allreduce(ring(6))
    for level in (1, 6):
        save_schedule(s, tmp_path / f"a{level}.npz", level=level)
    time.sleep(2.1)                         # zip dates have a 2-second resolution
    for level in (1, 6):
        a, b = tmp_path / f"a{level}.npz", tmp_path / f"b{level}.npz"
        save_schedule(s, b, level=level)
        assert a.read_bytes() == b.read_bytes()
        assert load_schedule(a).fingerprint() == s.fingerprint()

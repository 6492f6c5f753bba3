"""Bad input, table-driven: every command and the public API, files included.

Each CLI case asserts the exit status (2 for bad input; 1 only for a schedule that
``verify`` rejects), that standard error is exactly one line that starts with ``error:``
and names the offending item, that nothing prints a traceback, and that the answer comes
in under 5 seconds (a guard refuses what is too large before building it). Each API case
asserts the exception type and that its message names the parameter.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.errors import TopocollError

runner = CliRunner()
HANG_S = 60.0  # a hang guard, not a speed target (speed lives in benchmarks/)


class TookTooLong(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: float):
    """Interrupt the body after ``seconds`` (a hang fails the case instead of the suite)."""
    def stop(signum, frame):
        raise TookTooLong(f"still running after {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)

# ----------------------------------------------------------------------------- files
GOOD_TOPO = ("type: topocoll.topology\nversion: 1\nname: pair\nnum_ranks: 2\n"
             "num_switches: 0\nlinks:\n"
             "- {src: 0, dst: 1, bandwidth: 100Gbps, latency: 1us}\n"
             "- {src: 1, dst: 0, bandwidth: 100Gbps, latency: 1us}\n")


def _topo(**repl) -> str:
    text = GOOD_TOPO
    for a, b in repl.items():
        text = text.replace(a.replace("_", " "), b)
    return text


FILES: dict[str, str | bytes] = {
    "empty.yaml": "",
    "list.yaml": "- 1\n- 2\n",
    "scalar.json": "42",
    "truncated.yaml": GOOD_TOPO[:120],
    "badjson.json": '{"type": "topocoll.topology", "num_ranks": 2,',
    "negbw.yaml": GOOD_TOPO.replace("bandwidth: 100Gbps, latency: 1us}\n-",
                                    "bandwidth: -5, latency: 1us}\n-", 1),
    "nanbw.yaml": GOOD_TOPO.replace("bandwidth: 100Gbps", "bandwidth: .nan", 1),
    "infbw.yaml": GOOD_TOPO.replace("bandwidth: 100Gbps", "bandwidth: .inf", 1),
    "neglat.yaml": GOOD_TOPO.replace("latency: 1us", "latency: -1us", 1),
    "nanlat.yaml": GOOD_TOPO.replace("latency: 1us", "latency: .nan", 1),
    "strbw.yaml": GOOD_TOPO.replace("bandwidth: 100Gbps", "bandwidth: fast", 1),
    "listbw.yaml": GOOD_TOPO.replace("bandwidth: 100Gbps", "bandwidth: [1, 2]", 1),
    "dangling.yaml": GOOD_TOPO.replace("{src: 1, dst: 0,", "{src: 1, dst: 7,", 1),
    "selfloop.yaml": GOOD_TOPO.replace("{src: 1, dst: 0,", "{src: 1, dst: 1,", 1),
    "oneway.yaml": GOOD_TOPO.split("- {src: 1")[0],
    "noranks.yaml": GOOD_TOPO.replace("num_ranks: 2", "num_ranks: 0"),
    "strranks.yaml": GOOD_TOPO.replace("num_ranks: 2", "num_ranks: two"),
    "floatranks.yaml": GOOD_TOPO.replace("num_ranks: 2", "num_ranks: 2.5"),
    "hugeranks.yaml": GOOD_TOPO.replace("num_ranks: 2", "num_ranks: 100000000000"),
    "nolinks.yaml": GOOD_TOPO.split("links:")[0],
    "linksdict.yaml": GOOD_TOPO.split("links:")[0] + "links: {a: 1}\n",
    "badlink.yaml": GOOD_TOPO.split("links:")[0] + "links:\n- 17\n",
    "missingdst.yaml": GOOD_TOPO.replace("{src: 0, dst: 1,", "{src: 0,", 1),
    "floatsrc.yaml": GOOD_TOPO.replace("{src: 0, dst: 1,", "{src: 0.5, dst: 1,", 1),
    "dupkey.yaml": GOOD_TOPO.replace("num_ranks: 2\n", "num_ranks: 2\nnum_ranks: 3\n"),
    "unknownkey.yaml": GOOD_TOPO + "colour: blue\n",
    "badversion.yaml": GOOD_TOPO.replace("version: 1", "version: 99"),
    "badtype.yaml": GOOD_TOPO.replace("type: topocoll.topology", "type: pizza"),
    "badrouting.yaml": GOOD_TOPO + "routing: teleport\n",
    "pyobject.yaml": "!!python/object/apply:os.system ['echo pwned']\n",
    "anchors.yaml": "a: &a ['x','x','x','x','x','x','x','x','x']\n"
                    + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                              for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    "dimsmismatch.yaml": GOOD_TOPO + "dims:\n- {kind: ring, size: 4, bandwidth: 1e9, "
                                     "latency: 0}\n",
    "binary.yaml": b"\x00\xff\xfe\x01garbage",
    "astra_bad.yml": "topology: [Ring, Switch]\nnpus_count: [4]\nbandwidth: [50, 25]\n"
                     "latency: [500, 500]\n",
    "astra_neg.yml": "topology: [Ring]\nnpus_count: [-4]\nbandwidth: [50]\nlatency: [500]\n",
    # schedules
    "sched_trunc.json": '{"type": "topocoll.schedule", "version": 1, "collective": {',
    "sched_list.json": "[1, 2, 3]",
    "sched_kind.json": json.dumps({"type": "topocoll.schedule", "version": 1,
                                   "collective": {"kind": "allfoo", "ranks": [0, 1]},
                                   "steps": []}),
    "sched_ranks.json": json.dumps({"type": "topocoll.schedule", "version": 1,
                                    "collective": {"kind": "allreduce", "ranks": "all"},
                                    "steps": []}),
    "sched_steps.json": json.dumps({"type": "topocoll.schedule", "version": 1,
                                    "collective": {"kind": "allgather", "ranks": [0, 1]},
                                    "steps": [[{"src": 0, "dst": 1, "op": "copy",
                                                "chunks": ["a"]}]]}),
    "sched_neg.json": json.dumps({"type": "topocoll.schedule", "version": 1,
                                  "collective": {"kind": "allgather", "ranks": [0, 1]},
                                  "steps": [[{"src": -1, "dst": 1, "op": "copy",
                                              "chunks": [0]}]]}),
    "sched_version.json": json.dumps({"type": "topocoll.schedule", "version": 7,
                                      "collective": {"kind": "allgather", "ranks": [0, 1]},
                                      "steps": []}),
    "sched_notsched.json": json.dumps({"type": "topocoll.topology", "version": 1}),
    "sched_corrupt.npz": b"PK\x03\x04 this is not a zip archive at all",
    "sched_empty.npz": b"",
    "sched.txt": "not a schedule",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    for name, body in FILES.items():
        (d / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    (d / "adir.yaml").mkdir()
    # real schedules: a good one, a wrong one (a transfer dropped), a doubled reduce
    ok = runner.invoke(app, ["synth", "-t", "ring:4", "-c", "allreduce", "-a", "ring",
                             "-o", str(d / "good.json"), "--no-cache"])
    assert ok.exit_code == 0, ok.output
    good = json.loads((d / "good.json").read_text())
    dropped = json.loads(json.dumps(good))
    dropped["steps"][-1] = dropped["steps"][-1][1:]
    (d / "dropped.json").write_text(json.dumps(dropped))
    doubled = json.loads(json.dumps(good))
    doubled["steps"][0] = doubled["steps"][0] + doubled["steps"][0][:1]
    (d / "doubled.json").write_text(json.dumps(doubled))
    (d / "existing").write_text("already here")
    (d / "t_good.txt").write_text("ring:8\n")
    (d / "garbage_et").mkdir()
    (d / "garbage_et" / "w.0.et").write_text("garbage\n")
    (d / "libra_empty.json").write_text("{}")
    line = "".join(f"- {{src: {i}, dst: {j}, bandwidth: 1e9}}\n" for i in range(3)
                   for j in (i + 1,)) + "".join(f"- {{src: {i + 1}, dst: {i}, bandwidth: 1e9}}\n"
                                                for i in range(3))
    (d / "lineasring.yaml").write_text(
        "type: topocoll.topology\nversion: 1\nnum_ranks: 4\n"
        "dims: [{kind: ring, size: 4, bandwidth: 1e9, latency: 0}]\nlinks:\n" + line)
    ok_sweep = ("command: compare\ngrid:\n  topology: [ring:4]\n"
                "fixed: {collective: allreduce, algorithm: ring, size: 1KiB}\n")
    (d / "sweep_ok.yaml").write_text(ok_sweep)
    (d / "sweep_overlap.yaml").write_text(
        "command: compare\ngrid:\n  topology: [ring:4]\n  size: [1KiB, 1MiB]\n"
        "fixed: {collective: allreduce, algorithm: ring}\n"
        "sample: {count: 2, options: {size: {choices: [1KiB, 1MiB]}}}\n")
    (d / "sweep_count.yaml").write_text(
        ok_sweep + "sample: {count: -3, options: {alpha: {low: 1e-7, high: 1e-5}}}\n")
    (d / "sweep_option.yaml").write_text(ok_sweep.replace("size: 1KiB", "colour: red"))
    (d / "sweep_fails.yaml").write_text(ok_sweep.replace("algorithm: ring",
                                                         "algorithm: teleport"))
    return d


# ----------------------------------------------------------------------------- CLI cases
T = ["-t", "ring:4"]
S4 = "{d}/good.json"
CLI: list[tuple[str, list[str], int, str]] = [
    # --- topology specs (as the argument of `topology show` and every -t)
    ("spec-unknown", ["topology", "show", "nosuch:4"], 2, "nosuch"),
    ("spec-empty", ["topology", "show", ""], 2, "generator"),
    ("spec-colon", ["topology", "show", ":"], 2, "generator"),
    ("spec-ring-zero", ["topology", "show", "ring:0"], 2, "num_ranks"),
    ("spec-ring-one", ["topology", "show", "ring:1"], 2, "num_ranks"),
    ("spec-ring-neg", ["topology", "show", "ring:-4"], 2, "num_ranks"),
    ("spec-ring-float", ["topology", "show", "ring:4.5"], 2, "'n'"),
    ("spec-ring-word", ["topology", "show", "ring:four"], 2, "'n'"),
    ("spec-ring-missing", ["topology", "show", "ring"], 2, "'n'"),
    ("spec-ring-huge", ["topology", "show", "ring:100000000000"], 2, "nodes"),
    ("spec-torus-huge", ["topology", "show", "torus:100000x100000"], 2, "nodes"),
    ("spec-torus-empty-dim", ["topology", "show", "torus:4x"], 2, "shape"),
    ("spec-torus-zero", ["topology", "show", "torus:4x0"], 2, "dimension size"),
    ("spec-torus-one", ["topology", "show", "torus:1x4"], 2, "dimension size"),
    ("spec-torus-neg", ["topology", "show", "torus:4x-2"], 2, "dimension size"),
    ("spec-mesh-word", ["topology", "show", "mesh:axb"], 2, "shape"),
    ("spec-hypercube-huge", ["topology", "show", "hypercube:40"], 2, "nodes"),
    ("spec-hypercube-zero", ["topology", "show", "hypercube:0"], 2, "dimension"),
    ("spec-fc-huge", ["topology", "show", "fc:20000"], 2, "links"),
    ("spec-fattree-odd", ["topology", "show", "fattree:k=5"], 2, "k must be even"),
    ("spec-fattree-huge", ["topology", "show", "fattree:k=1000"], 2, "nodes"),
    ("spec-fattree-oversub-neg", ["topology", "show", "fattree:k=4,oversub=-1"], 2, "oversub"),
    ("spec-fattree-oversub-nan", ["topology", "show", "fattree:k=4,oversub=nan"], 2, "oversub"),
    ("spec-leafspine-missing", ["topology", "show", "leafspine:leaves=4"], 2, "spines"),
    ("spec-leafspine-zero", ["topology", "show", "leafspine:leaves=0,spines=2,hosts=4"], 2,
     "leaves"),
    ("spec-dgx-zero", ["topology", "show", "dgx:0"], 2, "boxes"),
    ("spec-dgx-gpus", ["topology", "show", "dgx:2,gpus=0"], 2, "gpus"),
    ("spec-dgx-fabric", ["topology", "show", "dgx:2,fabric=token-ring"], 2, "fabric"),
    ("spec-dgxa100-bw", ["topology", "show", "dgx-a100:2,bw=10Gbps"], 2, "bw"),
    ("spec-circulant-jumps", ["topology", "show", "circulant:8,jumps=1/x"], 2, "jumps"),
    ("spec-circulant-zero-jump", ["topology", "show", "circulant:8,jumps=0"], 2, "jump"),
    ("spec-rrg-odd", ["topology", "show", "rrg:7,d=3"], 2, "3-regular"),
    ("spec-rrg-deg", ["topology", "show", "rrg:8,d=9"], 2, "9-regular"),
    ("spec-hier-kind", ["topology", "show", "hier:blob(4)"], 2, "dims"),
    ("spec-hier-size", ["topology", "show", "hier:ring(1)"], 2, "dim"),
    ("spec-hier-sep", ["topology", "show", "hier:ring(4)+switch(2)"], 2, "dims"),
    ("spec-hier-bw", ["topology", "show", "hier:ring(4,fast)"], 2, "dims"),
    ("spec-hier-huge", ["topology", "show", "hier:ring(100000)x switch(100000)"], 2, "nodes"),
    ("spec-bw-unit", ["topology", "show", "ring:4,bw=fast"], 2, "bw"),
    ("spec-bw-zero", ["topology", "show", "ring:4,bw=0Gbps"], 2, "bw"),
    ("spec-bw-neg", ["topology", "show", "ring:4,bw=-1Gbps"], 2, "bw"),
    ("spec-bw-inf", ["topology", "show", "ring:4,bw=inf"], 2, "bw"),
    ("spec-bw-nan", ["topology", "show", "ring:4,bw=nan"], 2, "bw"),
    ("spec-bw-time", ["topology", "show", "ring:4,bw=5us"], 2, "bw"),
    ("spec-lat-neg", ["topology", "show", "ring:4,lat=-1us"], 2, "lat"),
    ("spec-lat-rate", ["topology", "show", "ring:4,lat=10Gbps"], 2, "lat"),
    ("spec-lat-inf", ["topology", "show", "ring:4,lat=inf"], 2, "lat"),
    ("spec-routing", ["topology", "show", "ring:4,routing=teleport"], 2, "routing"),
    ("spec-fwd", ["topology", "show", "ring:4,fwd=-3ns"], 2, "fwd"),
    ("spec-unknown-opt", ["topology", "show", "ring:4,colour=blue"], 2, "colour"),
    ("spec-dup-opt", ["topology", "show", "ring:4,bw=1Gbps,bw=2Gbps"], 2, "bw"),
    ("spec-extra-pos", ["topology", "show", "ring:4,5"], 2, "ring"),
    ("spec-flag-value", ["topology", "show", "ring:4,bidirectional=maybe"], 2,
     "bidirectional"),
    ("spec-random-spread", ["topology", "show", "random:8,spread=0.5"], 2, "spread"),
    ("spec-random-density", ["topology", "show", "random:8,density=1.5"], 2, "density"),
    ("spec-random-density0", ["topology", "show", "random:8,density=0"], 2, "density"),
    ("spec-random-seed", ["topology", "show", "random:8,seed=-1"], 2, "seed"),
    ("spec-bimodal-frac", ["topology", "show", "bimodal:8,frac=2"], 2, "frac"),
    ("spec-bimodal-slow", ["topology", "show", "bimodal:8,slow=0bps"], 2, "slow"),
    ("spec-twotier-oversub", ["topology", "show", "twotier:racks=2,hosts=2,oversub=0"], 2,
     "oversub"),
    ("spec-contention", ["topology", "show", "random:8,contention=1.5"], 2, "contention"),
    ("spec-keep", ["topology", "show", "random:8,contention=0.2,keep=-1"], 2, "keep"),
    ("spec-mi250-zero", ["topology", "show", "mi250:0"], 2, "boxes"),
    ("spec-file-missing", ["topology", "show", "nowhere.yaml"], 2, "nowhere.yaml"),
    # --- topology files
    *[(f"file-{n}", ["topology", "validate", f"{{d}}/{n}"], 2, item) for n, item in [
        ("empty.yaml", "empty.yaml"), ("list.yaml", "list.yaml"), ("scalar.json", "scalar.json"),
        ("truncated.yaml", "truncated.yaml"), ("badjson.json", "badjson.json"),
        ("negbw.yaml", "link 0->1"), ("nanbw.yaml", "link 0->1"), ("infbw.yaml", "link 0->1"),
        ("neglat.yaml", "link 0->1"), ("nanlat.yaml", "link 0->1"),
        ("strbw.yaml", "link 0->1"), ("listbw.yaml", "link 0->1"),
        ("dangling.yaml", "link 1->7"), ("selfloop.yaml", "link 1->1"),
        ("oneway.yaml", "rank 1"), ("noranks.yaml", "num_ranks"),
        ("strranks.yaml", "num_ranks"), ("floatranks.yaml", "num_ranks"),
        ("hugeranks.yaml", "num_ranks"), ("nolinks.yaml", "links"),
        ("linksdict.yaml", "links"), ("badlink.yaml", "links[0]"), ("missingdst.yaml", "dst"),
        ("floatsrc.yaml", "links[0]"), ("dupkey.yaml", "num_ranks"), ("unknownkey.yaml", "colour"),
        ("badversion.yaml", "version"), ("badtype.yaml", "type"),
        ("badrouting.yaml", "routing"), ("pyobject.yaml", "pyobject.yaml"),
        ("anchors.yaml", "anchors.yaml"), ("dimsmismatch.yaml", "dims"),
        ("binary.yaml", "binary.yaml"), ("astra_bad.yml", "npus_count"),
        ("astra_neg.yml", "npus_count"), ("adir.yaml", "adir.yaml")]],
    # --- compare
    ("compare-kind", ["compare", *T, "-c", "allfoo"], 2, "allfoo"),
    ("compare-algo", ["compare", *T, "-a", "teleport"], 2, "teleport"),
    ("compare-algo-kind", ["compare", *T, "-c", "broadcast", "-a", "ring"], 2, "ring"),
    ("compare-size-word", ["compare", *T, "-s", "big"], 2, "size"),
    ("compare-size-zero", ["compare", *T, "-s", "0B"], 2, "size"),
    ("compare-size-neg", ["compare", *T, "-s", "-1MiB"], 2, "size"),
    ("compare-size-frac", ["compare", *T, "-s", "1.5B"], 2, "size"),
    ("compare-size-bits", ["compare", *T, "-s", "3b"], 2, "size"),
    ("compare-size-inf", ["compare", *T, "-s", "inf"], 2, "size"),
    ("compare-size-nan", ["compare", *T, "-s", "nan"], 2, "size"),
    ("compare-size-rate", ["compare", *T, "-s", "10Gbps"], 2, "size"),
    ("compare-ranks-word", ["compare", *T, "--ranks", "a,b"], 2, "ranks"),
    ("compare-ranks-dup", ["compare", *T, "--ranks", "0,0,1"], 2, "rank 0"),
    ("compare-ranks-out", ["compare", *T, "--ranks", "0,9"], 2, "rank 9"),
    ("compare-ranks-neg", ["compare", *T, "--ranks", "0,-1"], 2, "rank -1"),
    ("compare-ranks-one", ["compare", *T, "--ranks", "2"], 2, "ranks"),
    ("compare-ranks-empty", ["compare", *T, "--ranks", ","], 2, "ranks"),
    ("compare-root-allreduce", ["compare", *T, "--root", "1"], 2, "root"),
    ("compare-root-out", ["compare", *T, "-c", "broadcast", "--root", "7"], 2, "root"),
    ("compare-root-notmember", ["compare", *T, "-c", "broadcast", "--ranks", "0,1",
                                "--root", "3"], 2, "root"),
    ("compare-backend", ["compare", *T, "--backend", "quantum"], 2, "backend"),
    ("compare-alpha-neg", ["compare", *T, "--alpha", "-1us"], 2, "alpha"),
    ("compare-alpha-word", ["compare", *T, "--alpha", "soon"], 2, "alpha"),
    ("compare-topology-missing", ["compare"], 2, "topology"),
    ("compare-unknown-flag", ["compare", *T, "--colour", "x"], 2, "colour"),
    ("compare-ring-huge", ["compare", "-t", "ring:100000"], 2, "ranks"),
    ("compare-bad-spec", ["compare", "-t", "ring:4,bw=1x"], 2, "bw"),
    # --- synth
    ("synth-option-unknown", ["synth", *T, "-a", "ring", "--option", "foo=1",
                              "-o", "{d}/x.json"], 2, "foo"),
    ("synth-option-form", ["synth", *T, "-a", "ring", "--option", "novalue",
                           "-o", "{d}/x.json"], 2, "novalue"),
    ("synth-option-bad-value", ["synth", *T, "-a", "double_binary_tree", "-c", "allreduce",
                                "--option", "pipeline=many", "-o", "{d}/x.json"], 2, "pipeline"),
    ("synth-option-neg", ["synth", *T, "-a", "double_binary_tree", "--option", "pipeline=-2",
                          "-o", "{d}/x.json"], 2, "pipeline"),
    ("synth-option-variant", ["synth", *T, "-a", "bidirectional_ring", "--option",
                              "variant=sideways", "-o", "{d}/x.json"], 2, "variant"),
    ("synth-option-size", ["synth", *T, "-c", "allgather", "-a", "optimal", "--option",
                           "message_bytes=lots", "-o", "{d}/x.json"], 2, "message_bytes"),
    ("synth-option-dup", ["synth", *T, "-a", "bidirectional_ring", "--option", "variant=halfway",
                          "--option", "variant=halfway", "-o", "{d}/x.json"], 2, "variant"),
    ("synth-root-allreduce", ["synth", *T, "--root", "3", "-o", "{d}/x.json"], 2, "root"),
    ("synth-root-out", ["synth", *T, "-c", "broadcast", "-a", "binomial_tree", "--root", "9",
                        "-o", "{d}/x.json"], 2, "root"),
    ("synth-algo", ["synth", *T, "-a", "teleport", "-o", "{d}/x.json"], 2, "teleport"),
    ("synth-kind", ["synth", *T, "-c", "allfoo", "-o", "{d}/x.json"], 2, "allfoo"),
    ("synth-not-applicable", ["synth", "-t", "fattree:k=4", "-a", "hamiltonian_rings",
                              "-o", "{d}/x.json"], 2, "hamiltonian_rings"),
    ("synth-out-dir", ["synth", *T, "-o", "{d}/adir.yaml"], 2, "adir.yaml"),
    ("synth-out-missing-dir", ["synth", *T, "-o", "{d}/no/such/dir/x.json"], 2, "x.json"),
    ("synth-out-ext", ["synth", *T, "-o", "{d}/x.xml"], 2, "x.xml"),
    ("synth-ranks-dup", ["synth", *T, "--ranks", "1,1", "-o", "{d}/x.json"], 2, "rank 1"),
    ("synth-ranks-one", ["synth", *T, "--ranks", "1", "-o", "{d}/x.json"], 2, "ranks"),
    # --- verify
    ("verify-missing", ["verify", "{d}/nothing.json"], 2, "nothing.json"),
    ("verify-dir", ["verify", "{d}/adir.yaml"], 2, "adir.yaml"),
    ("verify-trunc", ["verify", "{d}/sched_trunc.json"], 2, "sched_trunc.json"),
    ("verify-list", ["verify", "{d}/sched_list.json"], 2, "sched_list.json"),
    ("verify-kind", ["verify", "{d}/sched_kind.json"], 2, "allfoo"),
    ("verify-ranks", ["verify", "{d}/sched_ranks.json"], 2, "ranks"),
    ("verify-steps", ["verify", "{d}/sched_steps.json"], 2, "chunks"),
    ("verify-neg", ["verify", "{d}/sched_neg.json"], 1, "node -1"),
    ("verify-version", ["verify", "{d}/sched_version.json"], 2, "version"),
    ("verify-notsched", ["verify", "{d}/sched_notsched.json"], 2, "type"),
    ("verify-corrupt-npz", ["verify", "{d}/sched_corrupt.npz"], 2, "sched_corrupt.npz"),
    ("verify-empty-npz", ["verify", "{d}/sched_empty.npz"], 2, "sched_empty.npz"),
    ("verify-txt", ["verify", "{d}/sched.txt"], 2, "sched.txt"),
    ("verify-topology-small", ["verify", S4, "-t", "ring:2"], 1, "rank 2"),
    ("verify-topology-bad", ["verify", S4, "-t", "ring:x"], 2, "'n'"),
    ("verify-maxviol", ["verify", S4, "--max-violations", "-3"], 2, "max-violations"),
    ("verify-dropped", ["verify", "{d}/dropped.json"], 1, "rank"),
    ("verify-doubled", ["verify", "{d}/doubled.json"], 1, "chunk"),
    # --- cost
    ("cost-missing", ["cost", "{d}/nothing.json", *T], 2, "nothing.json"),
    ("cost-corrupt", ["cost", "{d}/sched_corrupt.npz", *T], 2, "sched_corrupt.npz"),
    ("cost-size-zero", ["cost", S4, *T, "-s", "0B"], 2, "size"),
    ("cost-size-word", ["cost", S4, *T, "-s", "many"], 2, "size"),
    ("cost-size-frac", ["cost", S4, *T, "-s", "0.5B"], 2, "size"),
    ("cost-backend", ["cost", S4, *T, "-b", "abacus"], 2, "backend"),
    ("cost-topology-small", ["cost", S4, "-t", "ring:3"], 2, "rank 3"),
    ("cost-alpha", ["cost", S4, *T, "--alpha", "-2us"], 2, "alpha"),
    ("cost-wrong", ["cost", "{d}/dropped.json", *T], 2, "dropped.json"),
    # --- simulate
    ("sim-backend", ["simulate", S4, *T, "-b", "analytical"], 2, "backend"),
    ("sim-backend-bad", ["simulate", S4, *T, "-b", "warp"], 2, "backend"),
    ("sim-load-neg", ["simulate", S4, *T, "-b", "packet", "--background-load", "-0.5"], 2,
     "background-load"),
    ("sim-load-big", ["simulate", S4, *T, "-b", "packet", "--background-load", "1.5"], 2,
     "background-load"),
    ("sim-load-nan", ["simulate", S4, *T, "-b", "packet", "--background-load", "nan"], 2,
     "background-load"),
    ("sim-load-flow", ["simulate", S4, *T, "-b", "flow", "--background-load", "0.3"], 2,
     "background"),
    ("sim-dist", ["simulate", S4, *T, "-b", "packet", "--background-dist", "zipf"], 2,
     "background-dist"),
    ("sim-dist-unused", ["simulate", S4, *T, "--background-dist", "zipf"], 2,
     "background-dist"),
    ("sim-alpha", ["simulate", S4, *T, "--alpha", "fast"], 2, "alpha"),
    ("sim-reduce-bw", ["simulate", S4, *T, "--reduce-bandwidth", "-1GB/s"], 2,
     "reduce-bandwidth"),
    ("sim-size-zero", ["simulate", S4, *T, "-s", "0"], 2, "size"),
    ("sim-trace-dir", ["simulate", S4, *T, "--trace", "{d}/no/dir/t.json"], 2, "t.json"),
    ("sim-util-dir", ["simulate", S4, *T, "--utilization", "{d}/adir.yaml"], 2, "adir.yaml"),
    ("sim-seed-neg", ["simulate", S4, *T, "-b", "packet", "--background-load", "0.2",
                      "--seed", "-1"], 2, "seed"),
    ("sim-missing", ["simulate", "{d}/nothing.json", *T], 2, "nothing.json"),
    # --- bound
    ("bound-kind", ["bound", *T, "-c", "allfoo"], 2, "allfoo"),
    ("bound-alltoall", ["bound", *T, "-c", "alltoall"], 2, "alltoall"),
    ("bound-size", ["bound", *T, "-s", "0B"], 2, "size"),
    ("bound-size-word", ["bound", *T, "-s", "huge"], 2, "size"),
    ("bound-ranks", ["bound", *T, "--ranks", "0,0"], 2, "rank 0"),
    ("bound-root-allgather", ["bound", *T, "--root", "1"], 2, "root"),
    ("bound-root-out", ["bound", *T, "-c", "broadcast", "--root", "5"], 2, "root"),
    ("bound-barrier-kind", ["bound", *T, "-c", "broadcast", "--barrier"], 2, "barrier"),
    ("bound-barrier-ranks", ["bound", *T, "--ranks", "0,1", "--barrier"], 2, "barrier"),
    ("bound-huge", ["bound", "-t", "torus:100000x100000"], 2, "nodes"),
    # --- export
    ("msccl-wrong", ["export", "msccl", "{d}/dropped.json", "-o", "{d}/x.xml"], 2, "dropped.json"),
    ("msccl-doubled", ["export", "msccl", "{d}/doubled.json", "-o", "{d}/x.xml"], 2,
     "doubled.json"),
    ("msccl-dialect", ["export", "msccl", S4, "-o", "{d}/x.xml", "--dialect", "nccl"], 2,
     "dialect"),
    ("msccl-missing", ["export", "msccl", "{d}/nothing.json", "-o", "{d}/x.xml"], 2,
     "nothing.json"),
    ("msccl-out-dir", ["export", "msccl", S4, "-o", "{d}/adir.yaml"], 2, "adir.yaml"),
    ("chakra-wrong", ["export", "chakra", "{d}/dropped.json", "-o", "{d}/traces"], 2,
     "dropped.json"),
    ("chakra-existing-file", ["export", "chakra", S4, "-o", "{d}/existing"], 2, "existing"),
    ("chakra-size", ["export", "chakra", S4, "-o", "{d}/traces2", "-s", "0B"], 2, "size"),
    ("chakra-corrupt", ["export", "chakra", "{d}/sched_corrupt.npz", "-o", "{d}/t3"], 2,
     "sched_corrupt.npz"),
    # --- testbed (validated before anything is created)
    ("testbed-name", ["testbed", "up", *T, "--name", "Bad Name!"], 2, "name"),
    ("testbed-name-long", ["testbed", "up", *T, "--name", "abcdefghijklmnop"], 2, "name"),
    ("testbed-delay", ["testbed", "up", *T, "--delay", "teleport"], 2, "delay"),
    ("testbed-down-name", ["testbed", "down", "--name", "../etc"], 2, "name"),
    ("testbed-run-empty", ["testbed", "run", "--name", "zz9"], 2, "command"),
    ("testbed-bench-algo", ["testbed", "bench", *T, "--algorithms", "teleport"], 2,
     "teleport"),
    ("testbed-bench-iters", ["testbed", "bench", *T, "--iters", "0"], 2, "iters"),
    ("testbed-bench-size", ["testbed", "bench", *T, "-s", "0B"], 2, "size"),
    ("testbed-bench-kind", ["testbed", "bench", *T, "-c", "allfoo"], 2, "allfoo"),
    ("testbed-timeout", ["testbed", "run", "--timeout", "-1", "--", "true"], 2, "timeout"),
    ("testbed-dlcp-contend", ["testbed", "dlcp", "--contend", "99"], 2, "contend"),
    ("testbed-dlcp-contend-self", ["testbed", "dlcp", "--contend", "3"], 2, "contend"),
    # --- train
    ("train-model", ["train", "-m", "gpt5"], 2, "gpt5"),
    ("train-model-field", ["train", "-m", "transformer:hidden=64,heads=4"], 2, "ffn"),
    ("train-parallel-key", ["train", "-p", "tq=2"], 2, "tq=2"),
    ("train-parallel-value", ["train", "-p", "tp=eight"], 2, "tp"),
    ("train-parallel-world", ["train", "-t", "dgx:2", "-p", "tp=8,pp=8,dp=3"], 2, "parallel"),
    ("train-gpus", ["train", "-t", "dgx:2", "--gpus", "17"], 2, "gpus"),
    ("train-gpus-multiple", ["train", "-t", "dgx:2", "-p", "tp=3,pp=1"], 2, "parallel"),
    ("train-device", ["train", "--device", "tpu-v9"], 2, "tpu-v9"),
    ("train-recompute", ["train", "--recompute", "some"], 2, "recompute"),
    ("train-zero", ["train", "--zero", "4"], 2, "zero"),
    ("train-backend", ["train", "-b", "ns3"], 2, "backend"),
    ("train-seq", ["train", "--seq", "0"], 2, "seq"),
    ("train-batch", ["train", "-t", "dgx:2", "-p", "tp=8,pp=1", "--global-batch", "3"], 2,
     "global_batch"),
    ("train-heads", ["train", "-t", "dgx:2", "-m", "llama2-13b", "-p", "tp=16,pp=1"], 2, "tp"),
    ("train-memory", ["train", "-t", "dgx:2", "-m", "gpt3-175b", "-p", "tp=8,pp=1"], 2,
     "stage 0"),
    ("train-trace", ["train", "--trace", "{d}/no/dir/t.json"], 2, "t.json"),
    ("train-model-file", ["train", "-m", "{d}/nothing.yaml"], 2, "nothing.yaml"),
    # --- libra
    ("libra-objective", ["libra", "--objective", "fastest"], 2, "objective"),
    ("libra-unbounded", ["libra"], 2, "constraint"),
    ("libra-constraint", ["libra", "-c", "B0 + B7 == 5"], 2, "B0 + B7 == 5"),
    ("libra-constraint-op", ["libra", "-c", "B0 = 5"], 2, "B0 = 5"),
    ("libra-infeasible", ["libra", "-c", "B0 >= 400", "-c", "B0 + B1 + B2 + B3 == 300"], 2,
     "B0 >= 400"),
    ("libra-network", ["libra", "--network", "hier:ring(4)x line(8)"], 2, "line"),
    ("libra-network-file", ["libra", "--network", "{d}/nothing.yaml"], 2, "nothing.yaml"),
    ("libra-classes", ["libra", "--cost-classes", "Cheap,Dear"], 2, "cost classes"),
    ("libra-class-name", ["libra", "--cost-classes", "InterChiplet,InterPackage,InterNode,"
                          "Moon"], 2, "Moon"),
    ("libra-pipeline", ["libra", "-p", "tp=16,pp=2,dp=128", "-c", "B0 + B1 + B2 + B3 == 5"],
     2, "parallel"),
    ("libra-world", ["libra", "-p", "tp=16,dp=2", "-c", "B0 + B1 + B2 + B3 == 5"], 2,
     "parallel"),
    ("libra-tp-split", ["libra", "-p", "tp=3", "-c", "B0 + B1 + B2 + B3 == 5"], 2, "parallel"),
    ("libra-workload-alone", ["libra", "--workload", "{d}/nothing.txt"], 2, "communicator"),
    ("libra-budget", ["libra", "--budget", "-5"], 2, "budget"),
    ("libra-min-cost", ["libra", "--objective", "min-cost", "-c", "B0 + B1 + B2 + B3 <= 5"],
     2, "time-target"),
    ("libra-pareto", ["libra", "--pareto", "{d}/x.svg"], 2, "x.svg"),
    ("libra-job-weight", ["libra", "-j", "gpt3-175b:weight=-2"], 2, "weight"),
    ("libra-job-and-model", ["libra", "-j", "gpt3-175b", "-m", "resnet50"], 2, "--job"),
    ("libra-job-file-parallel", ["libra", "-j", "{d}/w.txt+{d}/c.yml:tp=4"], 2, "--job"),
    ("libra-job-empty", ["libra", "-j", ":weight=1"], 2, "--job"),
    ("libra-mix-weights", ["libra", "-j", "gpt3-175b", "--mix-weights", "cost"], 2,
     "--mix-weights"),
    ("libra-mix-weights-alone", ["libra", "--mix-weights", "slowdown"], 2, "--job"),
    # --- sweep options
    ("sweep-backend", ["sweep", "run", "{d}/s.json", "--backend", "dask"], 2, "backend"),
    ("sweep-address", ["sweep", "run", "{d}/s.json", "--address", "x:1"], 2, "address"),
    ("sweep-flush", ["sweep", "run", "{d}/s.json", "--flush-every", "0"], 2, "flush-every"),
    # --- dlcp
    ("dlcp-model", ["dlcp", "-m", "gpt3-175b"], 2, "model"),
    ("dlcp-scheme", ["dlcp", "--schemes", "baseline,magic"], 2, "magic"),
    ("dlcp-workers", ["dlcp", "--workers", "99"], 2, "workers"),
    ("dlcp-load", ["dlcp", "--background-load", "1.5"], 2, "background"),
    ("dlcp-background-class", ["dlcp", "--background-class", "9"], 2, "background class"),
    ("dlcp-eps", ["dlcp", "--eps", "0"], 2, "eps"),
    ("dlcp-iterations", ["dlcp", "--iterations", "0"], 2, "iterations"),
    ("dlcp-jobs", ["dlcp", "--jobs", "-1"], 2, "--jobs"),
    ("dlcp-transport", ["dlcp", "--transport", "bbr", "--workers", "2"], 2, "transport"),
    ("dlcp-window", ["dlcp", "--window", "0"], 2, "window"),
    ("dlcp-payload", ["dlcp", "--payload", "8B"], 2, "payload"),
    ("dlcp-buffer", ["dlcp", "--buffer", "lots"], 2, "lots"),
    ("dlcp-direct", ["dlcp", "-t", "ring:8"], 2, "switched"),
    ("testbed-dlcp-src", ["testbed", "dlcp", "--src", "99"], 2, "--src"),
    ("testbed-dlcp-eps", ["testbed", "dlcp", "--eps", "0.1,2"], 2, "--eps"),
    ("testbed-dlcp-same", ["testbed", "dlcp", "--src", "3"], 2, "--dst"),
    ("dlcp-pattern", ["dlcp", "-t", "leafspine:leaves=2,spines=2,hosts=2", "--workers", "4",
                      "--pattern", "mesh"], 2, "pattern"),
    ("dlcp-topology", ["dlcp", "-t", "leafspine:leaves=0"], 2, "spines"),
    # --- topoopt
    ("design-family", ["design", "--families", "rail,dragonfly"], 2, "dragonfly"),
    ("design-budget", ["design", "--budget", "lots"], 2, "budget"),
    ("design-budget-low", ["design", "--gpus", "16", "--budget", "10"], 2, "budget"),
    ("design-target", ["design", "--time-target", "-3s"], 2, "time-target"),
    ("design-box", ["design", "--box", "dgx-h900"], 2, "dgx-h900"),
    ("design-gpus", ["design", "--gpus", "12"], 2, "gpus"),
    ("design-oversub", ["design", "--oversubscription", "0.5"], 2, "oversubscription"),
    ("design-model", ["design", "-m", "gpt7"], 2, "gpt7"),
    ("design-backend", ["design", "--backend", "quantum"], 2, "backend"),
    ("design-rate", ["design", "--rate", "fast"], 2, "rate"),
    ("design-rate-budget", ["design", "--rate", "100Gbps", "--budget", "1e6"], 2, "rate"),
    ("design-packet-big", ["design", "--packet"], 2, "packet"),
    ("topoopt-model", ["topoopt", "-m", "gpt3-175b"], 2, "model"),
    ("topoopt-servers", ["topoopt", "--servers", "2"], 2, "servers"),
    ("topoopt-servers-huge", ["topoopt", "--servers", "100000"], 2, "servers"),
    ("topoopt-degree", ["topoopt", "--degree", "1"], 2, "degree"),
    ("topoopt-degree-big", ["topoopt", "--servers", "8", "--degree", "8"], 2, "degree"),
    ("topoopt-bw", ["topoopt", "--port-bw", "fast"], 2, "fast"),
    ("topoopt-split", ["topoopt", "--split", "half"], 2, "split"),
    ("topoopt-routing", ["topoopt", "--routing", "valiant"], 2, "routing"),
    ("topoopt-rounds", ["topoopt", "--rounds", "0"], 2, "rounds"),
    ("topoopt-steps", ["topoopt", "--steps", "-1"], 2, "steps"),
    ("topoopt-batch", ["topoopt", "--batch", "0"], 2, "batch"),
    ("topoopt-device", ["topoopt", "--device", "tpu-v9"], 2, "tpu-v9"),
    ("topoopt-prices", ["topoopt", "--prices", "{d}/nothing.yaml"], 2, "nothing.yaml"),
    ("topoopt-fit", ["topoopt", "-m", "candle-uno", "--servers", "4", "--degree", "2",
                     "--device", "v100"], 2, "candle-uno"),
    ("topoopt-odd", ["topoopt", "--servers", "9", "--degree", "3"], 2, "servers"),
    # --- export workload
    ("workload-dialect", ["export", "workload", "-o", "{d}/w.txt", "--dialect", "simai"], 2,
     "dialect"),
    ("workload-pp", ["export", "workload", "-o", "{d}/w.txt", "-p", "tp=8,pp=2"], 2,
     "parallel"),
    ("workload-out-dir", ["export", "workload", "-o", "{d}/no/dir/w.txt"], 2, "w.txt"),
    ("workload-model", ["export", "workload", "-o", "{d}/w.txt", "-m", "gpt5"], 2, "gpt5"),
    # --- study and the app
    ("study-name", ["study", "nothing"], 2, "nothing"),
    ("study-routing", ["study", "swing", "--routing", "teleport"], 2, "routing"),
    ("study-topology", ["study", "swing", "-t", "ring:8"], 2, "ring:8"),
    ("app-unknown-command", ["frobnicate"], 2, "frobnicate"),
    ("app-unknown-group-command", ["topology", "frobnicate"], 2, "frobnicate"),
    ("app-unknown-option", ["--colour"], 2, "colour"),
    ("list-what", ["list", "nothing"], 2, "nothing"),
    # --- issue 28: silent data loss and nonsense
    ("sweep-sample-overlaps-grid", ["sweep", "run", "{d}/sweep_overlap.yaml", "--db",
                                    "{d}/s1.duckdb"], 2, "sampled and in grid"),
    ("sweep-sample-count", ["sweep", "run", "{d}/sweep_count.yaml", "--db", "{d}/s2.duckdb"],
     2, "sample.count"),
    ("sweep-unknown-option", ["sweep", "run", "{d}/sweep_option.yaml", "--db",
                              "{d}/s3.duckdb"], 2, "colour"),
    ("sweep-db-not-duckdb", ["sweep", "run", "{d}/sweep_ok.yaml", "--db", "{d}/scalar.json"],
     2, "scalar.json"),
    ("sweep-every-point-fails", ["sweep", "run", "{d}/sweep_fails.yaml", "--db",
                                 "{d}/s4.duckdb", "--workers", "1"], 2, "every point"),
    ("train-layered-global-batch", ["train", "-m", "resnet50", "-t", "dgx:2",
                                    "--global-batch", "500"], 2, "--global-batch"),
    ("train-layered-search", ["train", "-m", "resnet50", "-t", "dgx:2", "--search"], 2,
     "--search"),
    ("train-exhaustive-alone", ["train", "-t", "dgx:2", "--exhaustive"], 2, "--exhaustive"),
    ("train-global-batch-huge", ["train", "--global-batch", "1000000000000"], 2,
     "--global-batch"),
    ("train-ep-dp-default", ["train", "-m", "mixtral-8x7b", "-t", "dgx-a100:2",
                             "-p", "tp=2,ep=16,pp=1"], 2, "ep=16"),
    ("export-astra-memory", ["export", "astra", "-o", "{d}/astra", "-m", "gpt3-175b",
                             "-p", "tp=1,pp=1,dp=8", "-t", "hier:switch(8)"], 2, "fit"),
    ("synth-ring-too-big", ["synth", "-t", "ring:16384", "-a", "ring", "-o", "{d}/big.npz"],
     2, "GiB"),
    ("synth-hamiltonian-too-big", ["synth", "-t", "torus:128x128", "-a", "hamiltonian_rings",
                                   "-o", "{d}/big.npz"], 2, "50.0 GiB"),
    ("validate-ring-dims-over-a-line", ["topology", "validate", "{d}/lineasring.yaml"], 2,
     "no link joins rank 3 to rank 0"),
    ("validate-spec-in-a-txt-file", ["topology", "validate", "{d}/t_good.txt"], 2, ".yaml"),
    ("compare-size-absurd", ["compare", "-t", "ring:4", "-s", "1e100"], 2, "PiB"),
    ("dlcp-buffer-zero", ["dlcp", "--buffer", "0"], 2, "--buffer"),
    ("query-not-duckdb", ["query", "{d}/scalar.json", "select 1"], 2, "scalar.json"),
    ("query-missing", ["query", "{d}/nothing.duckdb", "select 1"], 2, "nothing.duckdb"),
    ("report-not-duckdb", ["report", "{d}/scalar.json", "-o", "{d}/r.html"], 2, "scalar.json"),
    ("report-not-html", ["report", "{d}/scalar.json", "-o", "{d}/r.txt"], 2, "r.txt"),
    ("demo-output-dir", ["demo", "-o", "{d}/no/such/dir/r.md"], 2, "r.md"),
    ("study-output-unwritable", ["study", "libra", "-o", "/proc/st"], 2, "--output"),
    ("study-swing-packet-hyperx", ["study", "swing-packet", "-t", "hyperx:4x4", "-o", "{d}"], 2,
     "torus"),
    ("study-swing-packet-max-size", ["study", "swing-packet", "-t", "torus:4x4", "--max-size",
                                     "8B", "-o", "{d}"], 2, "--max-size"),
    ("import-chakra-not-a-trace", ["import", "chakra", "{d}/garbage_et"], 2,
     "not a Chakra execution trace"),
    ("libra-network-no-topology", ["libra", "--network", "{d}/libra_empty.json"], 2,
     "missing field 'Topology'"),
]


@pytest.mark.parametrize("name,args,code,item", CLI, ids=[c[0] for c in CLI])
def test_cli_bad_input(files, name, args, code, item):
    argv = [a.replace("{d}", str(files)) for a in args]
    with deadline(HANG_S):
        r = runner.invoke(app, argv)
    assert not isinstance(r.exception, TookTooLong), f"{name}: hangs"
    out = r.stdout + r.stderr
    assert "Traceback" not in out and r.exception is None or isinstance(r.exception, SystemExit), \
        f"{name}: {r.exception!r}\n{out}"
    assert r.exit_code == code, f"{name}: exit {r.exit_code}, expected {code}\n{out}"
    lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error:"), f"{name}:\n{r.stderr}"
    assert item.lower() in r.stderr.lower(), f"{name}: {item!r} not named in\n{r.stderr}"


@pytest.mark.parametrize("value", ["junk", "-5", "1.5B", "16 furlongs"])
def test_bad_schedule_limit_in_the_environment_is_named(monkeypatch, tmp_path, value):
    """TOPOCOLL_MAX_SCHEDULE_BYTES that is not a size: one line naming it, exit 2 (it used
    to fall back to the 8 GiB default without a word), whether the schedule is in the
    cache (second run) or not (first)."""
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    argv = ["compare", "-t", "ring:8", "-a", "ring", "-s", "1KiB"]
    for primed in (False, True):
        monkeypatch.setenv("TOPOCOLL_MAX_SCHEDULE_BYTES", value)
        r = runner.invoke(app, argv)
        assert r.exit_code == 2, (primed, r.stdout + r.stderr)
        lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
        assert len(lines) == 1 and "TOPOCOLL_MAX_SCHEDULE_BYTES" in lines[0], r.stderr
        monkeypatch.delenv("TOPOCOLL_MAX_SCHEDULE_BYTES")
        assert runner.invoke(app, argv).exit_code == 0       # now the cache holds it


def test_schedule_limit_takes_a_size_with_a_unit(monkeypatch):
    from topocoll.synth.registry import MAX_SCHEDULE_BYTES, max_schedule_bytes

    monkeypatch.setenv("TOPOCOLL_MAX_SCHEDULE_BYTES", "16GiB")
    assert max_schedule_bytes() == 16 * 2**30
    monkeypatch.setenv("TOPOCOLL_MAX_SCHEDULE_BYTES", str(2**20))
    assert max_schedule_bytes() == 2**20
    monkeypatch.delenv("TOPOCOLL_MAX_SCHEDULE_BYTES")
    assert max_schedule_bytes() == MAX_SCHEDULE_BYTES


# ----------------------------------------------------------------------------- API cases
def _api():
    from topocoll.collective import make_collective
    from topocoll.cost import AlphaBeta
    from topocoll.optimum import lower_bound
    from topocoll.schedule import load_schedule
    from topocoll.selection import choose, find_algorithm
    from topocoll.sim import FlowSim, PacketSim
    from topocoll.synth import ring_allreduce
    from topocoll.topology import (
        Link,
        Topology,
        dgx,
        fat_tree,
        from_matrix,
        hypercube,
        leaf_spine,
        load_topology,
        ring,
        torus,
    )
    from topocoll.topology.io import topology_from_dict
    from topocoll.units import parse_rate, parse_size, parse_time
    from topocoll.verification import verify

    t = ring(4)
    s = ring_allreduce(t)
    return [
        ("rate-word", lambda: parse_rate("fast"), ValueError, "fast"),
        ("rate-time", lambda: parse_rate("5us"), ValueError, "5us"),
        ("rate-list", lambda: parse_rate([1]), ValueError, "[1]"),
        ("rate-neg", lambda: parse_rate("-1Gbps"), ValueError, "-1Gbps"),
        ("rate-nan", lambda: parse_rate(float("nan")), ValueError, "nan"),
        ("rate-inf", lambda: parse_rate("inf"), ValueError, "inf"),
        ("size-word", lambda: parse_size("lots"), ValueError, "lots"),
        ("size-frac", lambda: parse_size("1.5B"), ValueError, "1.5B"),
        ("size-bits", lambda: parse_size("12b"), ValueError, "12b"),
        ("size-float", lambda: parse_size(2.5), ValueError, "2.5"),
        ("size-inf", lambda: parse_size(math.inf), ValueError, "inf"),
        ("size-bool", lambda: parse_size(True), ValueError, "True"),
        ("time-word", lambda: parse_time("soon"), ValueError, "soon"),
        ("time-neg", lambda: parse_time("-1us"), ValueError, "-1us"),
        ("time-nan", lambda: parse_time(math.nan), ValueError, "nan"),
        ("ring-str", lambda: ring("8"), TypeError, "num_ranks"),
        ("ring-float", lambda: ring(8.0), TypeError, "num_ranks"),
        ("ring-bw-str-bad", lambda: ring(8, bandwidth="fast"), ValueError, "bandwidth"),
        ("ring-bw-list", lambda: ring(8, bandwidth=[1, 2]), TypeError, "bandwidth"),
        ("ring-lat-str-bad", lambda: ring(8, latency="soon"), ValueError, "latency"),
        ("ring-bw-neg", lambda: ring(8, bandwidth=-1.0), ValueError, "bandwidth"),
        ("torus-str", lambda: torus("4x4"), TypeError, "shape"),
        ("torus-float", lambda: torus((4, 4.5)), TypeError, "shape"),
        ("torus-zero", lambda: torus((4, 0)), ValueError, "shape"),
        ("hypercube-neg", lambda: hypercube(-1), ValueError, "d"),
        ("fattree-odd", lambda: fat_tree(5), ValueError, "k"),
        ("fattree-huge", lambda: fat_tree(2000), ValueError, "nodes"),
        ("leafspine-str", lambda: leaf_spine("4", 2, 2), TypeError, "leaves"),
        ("dgx-bw", lambda: dgx(2, nic_bandwidth="fast"), ValueError, "nic_bandwidth"),
        ("matrix-nan", lambda: from_matrix([[0, math.nan], [1, 0]]), ValueError, "link 0->1"),
        ("matrix-shape", lambda: from_matrix([[0, 1, 2], [1, 0, 2]]), ValueError, "bandwidth"),
        ("link-bool", lambda: Link(True, 1, 1.0), ValueError, "link"),
        ("link-str-bw", lambda: Link(0, 1, "fast"), ValueError, "bandwidth"),
        ("topology-bad-links", lambda: Topology("x", 2, 0, (1, 2)), TypeError, "links"),
        ("topology-ranks-str", lambda: Topology("x", "2", 0, ()), TypeError, "num_ranks"),
        ("load-int", lambda: load_topology(42), TypeError, "spec"),
        ("load-none", lambda: load_topology(None), TypeError, "spec"),
        ("from-dict-list", lambda: topology_from_dict([1, 2]), ValueError, "mapping"),
        ("from-dict-text", lambda: topology_from_dict(GOOD_TOPO).num_ranks == 2 or 1 / 0,
         None, ""),
        ("load-schedule-int", lambda: load_schedule(5), TypeError, "path"),
        ("collective-kind", lambda: make_collective("allfoo", (0, 1)), ValueError, "allfoo"),
        ("collective-ranks-str", lambda: make_collective("allreduce", "01"), TypeError, "ranks"),
        ("collective-dup", lambda: make_collective("allreduce", (0, 0)), ValueError, "rank 0"),
        ("collective-root", lambda: make_collective("broadcast", (0, 1), root=5), ValueError,
         "root"),
        ("collective-root-allreduce", lambda: make_collective("allreduce", (0, 1), root=1),
         ValueError, "root"),
        ("collective-split", lambda: make_collective("allreduce", (0, 1), split=0), ValueError,
         "split"),
        ("alphabeta-alpha", lambda: AlphaBeta(alpha=-1.0), ValueError, "alpha"),
        ("alphabeta-alpha-str", lambda: AlphaBeta(alpha="fast"), ValueError, "alpha"),
        ("alphabeta-routing", lambda: AlphaBeta(routing="teleport"), ValueError, "routing"),
        ("evaluate-size-neg", lambda: AlphaBeta().evaluate(s, t, -1), ValueError,
         "message_bytes"),
        ("evaluate-size-str-bad", lambda: AlphaBeta().evaluate(s, t, "big"), ValueError,
         "message_bytes"),
        ("evaluate-topology", lambda: AlphaBeta().evaluate(s, "ring:4", 1e6), TypeError,
         "topology"),
        ("evaluate-schedule", lambda: AlphaBeta().evaluate(None, t, 1e6), TypeError,
         "schedule"),
        ("flowsim-alpha", lambda: FlowSim(alpha=-1.0), ValueError, "alpha"),
        ("packetsim-mtu", lambda: PacketSim(mtu=0), ValueError, "mtu"),
        ("verify-topology", lambda: verify(s, "ring:4"), TypeError, "topology"),
        ("verify-schedule", lambda: verify("s", t), TypeError, "schedule"),
        ("bound-size", lambda: lower_bound(s.collective, t, -5), ValueError, "size"),
        ("bound-topology", lambda: lower_bound(s.collective, None, 5), TypeError, "topology"),
        ("choose-kind", lambda: choose("allfoo", t, 1e6), ValueError, "allfoo"),
        ("choose-size", lambda: choose("allreduce", t, 0), ValueError, "message_bytes"),
        ("choose-model", lambda: choose("allreduce", t, 1e6, model="fast"), TypeError, "model"),
        ("find-algorithm", lambda: find_algorithm("teleport", "allreduce"), TopocollError,
         "teleport"),
        ("synth-option", lambda: find_algorithm("ring", "allreduce")(t, colour="blue"),
         TypeError, "colour"),
        ("synth-ranks", lambda: find_algorithm("ring", "allreduce")(t, ranks=(0, 9)),
         ValueError, "rank 9"),
        ("synth-root", lambda: find_algorithm("ring", "allreduce")(t, root=1), TypeError,
         "root"),
        ("synth-size-str", lambda: find_algorithm("optimal", "allgather")(t, message_bytes="1GiB")
         .collective.kind == "allgather" or 1 / 0, None, ""),
        ("synth-size-bad", lambda: find_algorithm("optimal", "allgather")(t, message_bytes="lots"),
         ValueError, "message_bytes"),
        ("array-topology", lambda: AlphaBeta().evaluate(s, np.zeros(3), 1e6), TypeError,
         "topology"),
        ("synth-too-big", lambda: find_algorithm("ring", "allreduce")(ring(16384)),
         TopocollError, "GiB"),
        ("synth-spec-string", lambda: ring_allreduce("ring:8"), TypeError, "topology"),
        ("load-schedule-missing", lambda: load_schedule("nope.json"), TopocollError,
         "nope.json"),
        ("torus-bw-keyword", lambda: torus((4, 4), bw="400Gbps"), TypeError, "bw"),
    ]


API = _api()


@pytest.mark.parametrize("name,call,exc,item", API, ids=[a[0] for a in API])
def test_api_bad_input(name, call, exc, item):
    with deadline(HANG_S):
        if exc is None:               # accepted on purpose (a path or text, a rate string)
            assert call()
        else:
            with pytest.raises(exc) as info:
                call()
            assert item.lower() in str(info.value).lower(), f"{name}: {info.value}"


def test_every_command_has_a_bad_input_case():
    from _commands import leaf_commands

    missing = [" ".join(w) for w, _ in leaf_commands()
               if not any(args[:len(w)] == w for _, args, _, _ in CLI)]
    assert not missing, f"commands without a bad-input case: {missing}"


def test_the_table_is_large_enough():
    assert len(CLI) + len(API) >= 250


def test_library_parameters_become_the_commands_flags():
    """The library names its parameters; the command line writes them as its flags (only
    the first mention, and only names that are options of the command that ran)."""
    import typer

    from topocoll.cli.app import _leaf_command, as_flags
    from topocoll.errors import InputError

    design = _leaf_command(typer.main.get_command(app), ["design", "--gpus", "8"])
    assert design.name == "design"
    e = InputError("rate must be a positive line rate, got -1", item="rate")
    assert as_flags(e, design) == "--rate must be a positive line rate, got -1"
    e = InputError("give budget or time_target, not both", item="budget, time_target")
    assert as_flags(e, design) == "give --budget or --time-target, not both"
    e = InputError("servers must be >= 3", item="servers")      # not an option of design
    assert as_flags(e, design) == "servers must be >= 3"
    assert as_flags(e, None) == "servers must be >= 3"
    bound = _leaf_command(typer.main.get_command(app), ["bound", "-t", "ring:4"])
    e = InputError("message_bytes must be a number of bytes > 0, got 0", item="message_bytes")
    assert as_flags(e, bound) == "--size must be a number of bytes > 0, got 0"
    r = runner.invoke(app, ["design", "--gpus", "8", "--budget", "1e6", "--time-target", "1"])
    assert r.exit_code == 2 and "--budget" in r.stderr and "--time-target" in r.stderr

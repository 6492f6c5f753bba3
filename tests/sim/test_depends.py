"""The dependency rule's groups."""

from __future__ import annotations

import numpy as np

from topocoll.collective import allgather
from topocoll.schedule import ScheduleBuilder
from topocoll.sim.depends import dependency_groups


def test_groups_follow_node_and_step():
    b = ScheduleBuilder(allgather(4))
    b.new_step().add(0, 1, 0).add(2, 3, 2)
    b.new_step().add(1, 2, 0).add(3, 3, 1)       # a self transfer counts once
    d = dependency_groups(b.build(), 5)
    # groups: (0,s0) (1,s0) (1,s1) (2,s0) (2,s1) (3,s0) (3,s1)
    assert d.count.tolist() == [1, 1, 1, 1, 1, 1, 1]
    assert d.group_of_src.tolist() == [0, 3, 2, 6]
    assert d.group_of_dst.tolist() == [1, 5, 4, 6]
    assert d.node_first.tolist() == [0, 1, 3, 5, 7]
    assert d.node_end.tolist() == [1, 3, 5, 7, 7]
    released = {g: d.release[d.release_ptr[g]:d.release_ptr[g + 1]].tolist()
                for g in range(len(d.count))}
    assert released == {0: [0], 1: [], 2: [2], 3: [1], 4: [], 5: [], 6: [3]}
    assert np.all(np.diff(d.release_ptr) >= 0)

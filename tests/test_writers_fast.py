"""The plan writer and the plan digest from arrays: the same text as formatting row by row, and the same digest
as parsing the written text back (the sidecar's ``plan_sha256``), on random clusters with mixed RFs."""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.formats import writers
from flowbalance.generate import generate_cluster
from flowbalance.model import PAD
from flowbalance.planmeta import plan_text_sha256, rows_sha256


def _row_by_row(state, rows=None, log_dirs=None) -> str:
    """The reference: each partition's line formatted on its own, padding skipped wherever it is."""
    rows = np.sort(np.arange(state.num_partitions) if rows is None else np.asarray(rows, dtype=np.int64))
    with_dirs = state.had_log_dirs if log_dirs is None else log_dirs
    lines = []
    for i in rows.tolist():
        row = [int(b) for b in state.replicas[i] if b != PAD]
        line = (f'{{"topic":{writers.dumps_str(state.topics[state.topic[i]])},"partition":{int(state.partition[i])},'
                f'"replicas":[{",".join(map(str, row))}]')
        if with_dirs:
            line += ',"log_dirs":[' + ",".join(['"any"'] * len(row)) + "]"
        lines.append(line + "}")
    return '{"version":1,"partitions":[\n' + ",\n".join(lines) + ("\n" if lines else "") + "]}\n"


@pytest.mark.parametrize("seed", range(24))
def test_writer_and_digest_match_the_row_by_row_reference(seed):
    rng = np.random.default_rng(seed)
    st = generate_cluster(brokers=int(rng.integers(3, 12)), topics=int(rng.integers(1, 6)), partitions=(1, 9),
                          rf=int(rng.integers(1, 4)), seed=seed)
    reps = st.replicas.copy()
    if reps.shape[1] > 1:  # mixed RFs: some lists one shorter
        reps[rng.random(len(reps)) < 0.3, -1] = PAD
    st = st.with_replicas(reps)
    some = rng.choice(st.num_partitions, size=int(rng.integers(0, st.num_partitions + 1)), replace=False)
    for rows in (None, some, some[:0]):
        for log_dirs in (None, True, False):
            text = writers.reassignment_json(st, rows, log_dirs=log_dirs)
            assert text == _row_by_row(st, rows, log_dirs), (seed, log_dirs)
            assert rows_sha256(st, rows) == plan_text_sha256(text, "plan.json"), seed


def test_padding_before_an_id_is_skipped_as_before():
    st = generate_cluster(brokers=5, topics=1, partitions=4, rf=3, seed=1)
    reps = st.replicas.copy()
    reps[0] = [PAD, reps[0, 1], reps[0, 2]]  # not a state the planner makes; the text must still be right
    st = st.with_replicas(reps)
    assert writers.reassignment_json(st) == _row_by_row(st)

"""``flowbalance generate`` checks the requested sizes before allocating anything: at most MAX_REPLICAS replicas
(topics x the largest partition count x RF), MAX_TOPICS topics and MAX_BROKERS brokers, each refused in one line
that names the flags (and the product), with nothing written; the limits are in --help."""
from __future__ import annotations

import re
import tracemalloc

import pytest

from flowbalance.errors import InputError
from flowbalance.generate import MAX_BROKERS, MAX_REPLICAS, MAX_TOPICS, _check_replicas, generate_cluster

from .test_bad_input import assert_one_line


def test_absurd_sizes_are_one_line_naming_the_product_and_allocate_nothing(tmp_path, run_cli):
    out = tmp_path / "g"
    tracemalloc.start()
    try:
        code, stdout, err = run_cli("generate", "--brokers", "10", "--topics", "100000000", "--partitions", "100",
                                    "-o", out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = assert_one_line(code, stdout, err, "--topics x --partitions x --rf", "100,000,000 x 100 x 3",
                           "30,000,000,000 replicas", f"limit of {MAX_REPLICAS:,}")
    assert line.startswith("flowbalance: error: ")
    assert peak < 20 << 20, peak  # refused before any array of that size
    assert not out.exists()


def test_a_partition_range_counts_its_largest_value(tmp_path, run_cli):
    code, out, err = run_cli("generate", "--brokers", "10", "--topics", "100000", "--partitions", "10-1000",
                             "--rf", "2", "-o", tmp_path / "g")
    assert_one_line(code, out, err, "100,000 x up to 1,000 x 2 = 200,000,000 replicas")


@pytest.mark.parametrize("hi, rf", [(1, 1), (100, 3), (1000, 50), (7, 5)])
def test_the_replica_limit_is_exactly_the_product(hi, rf):
    most = MAX_REPLICAS // (hi * rf)  # the most topics within the limit
    _check_replicas(most, 1, hi, rf)
    with pytest.raises(InputError) as e:
        _check_replicas(most + 1, 1, hi, rf)
    assert f"= {(most + 1) * hi * rf:,} replicas" in str(e.value)


def test_library_refuses_too_many_topics_and_brokers():
    with pytest.raises(InputError, match=re.escape(f"at most {MAX_TOPICS:,}")):
        generate_cluster(brokers=3, topics=MAX_TOPICS + 1, partitions=1, rf=1)
    with pytest.raises(InputError, match="^generate_cluster: brokers: "):
        generate_cluster(brokers=MAX_BROKERS + 1, topics=1, partitions=1, rf=1)
    with pytest.raises(InputError, match="^generate_cluster: topics x partitions x rf: "):
        generate_cluster(brokers=3, topics=10, partitions=(1, MAX_REPLICAS), rf=3)


def test_help_states_the_limits(run_cli):
    code, out, _ = run_cli("generate", "--help")
    flat = " ".join(out.split())
    assert code == 0
    assert f"{MAX_REPLICAS:,} replicas" in flat and f"at most {MAX_TOPICS:,}" in flat and str(MAX_BROKERS) in flat

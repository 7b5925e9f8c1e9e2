"""The replicas (entries) of a disk assignment, kept sorted for the improvement rounds' searches (``disk.py``).

Each round of ``disk.improve`` looks up, per (donor, receiver) pair, a broker's replicas of about a given size and
a receiver's replica of one topic of at most a given size. Both are binary searches on the entries sorted by
(broker, size, row) and by (topic, broker, size, row). Rebuilding those orders every round costs a sort of every
replica (most of the stage's time at 446k replicas); here they are built once and then updated with the few
entries a round moved, in one merge per order.

Sizes enter as a rank: ``srank[row]`` is the row's place among all rows sorted by (size, row), so an entry is one
int64 key, ``broker * P + srank`` and ``(topic * NL + broker) * P + srank``, from which its row and broker are read
back (a row holds a broker at most once; its slot is found in the assignment).
"""
from __future__ import annotations

import numpy as np

from .disk_problem import DiskProblem


class EntryIndex:
    """Entries of an assignment as sorted int64 keys: ``b_key`` by (broker, size, row), ``t_key`` by (topic,
    broker, size, row)."""

    def __init__(self, p: DiskProblem, assign: np.ndarray):
        P, NL = p.num_partitions, p.num_brokers
        T = max(p.num_topics, 1)
        if T * NL * max(P, 1) >= 2 ** 62:
            raise ValueError(f"{T} topics x {NL} brokers x {P} partitions: too large for int64 keys")
        self.P, self.NL = P, NL
        self.topic = p.topic
        self.row_of = np.lexsort((np.arange(P), p.size))  # srank -> row
        self.srank = np.empty(P, dtype=np.int64)
        self.srank[self.row_of] = np.arange(P)
        self.sorted_size = p.size[self.row_of]
        r, s = np.nonzero(assign >= 0)
        b = assign[r, s].astype(np.int64)
        self.b_key = np.sort(self._bkey(r, b))
        self.t_key = np.sort(self._tkey(r, b))
        self._moved: dict[tuple[int, int], int] = {}  # (row, slot) -> broker at the last sync

    def _bkey(self, rows: np.ndarray, brokers: np.ndarray) -> np.ndarray:
        return brokers.astype(np.int64) * self.P + self.srank[rows]

    def _tkey(self, rows: np.ndarray, brokers: np.ndarray) -> np.ndarray:
        return (self.topic[rows] * self.NL + brokers.astype(np.int64)) * self.P + self.srank[rows]

    # reading -----------------------------------------------------------------------------------------------------

    def b_rows(self, at: np.ndarray) -> np.ndarray:
        """Rows of the entries at these positions of the (broker, size, row) order."""
        return self.row_of[self.b_key[at] % self.P]

    def t_entries(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, brokers) of the entries at these positions of the (topic, broker, size, row) order."""
        k = self.t_key[at]
        return self.row_of[k % self.P], (k // self.P) % self.NL

    def bounds(self, brokers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[first, last) of each broker's entries in the (broker, size, row) order."""
        b = np.asarray(brokers, dtype=np.int64)
        return np.searchsorted(self.b_key, b * self.P), np.searchsorted(self.b_key, (b + 1) * self.P)

    def first_at_least(self, brokers: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Per query, the first entry of the broker (broker order) with size >= target; the broker's end if none."""
        b = np.asarray(brokers, dtype=np.int64)
        rank = np.searchsorted(self.sorted_size, target, side="left")
        return np.searchsorted(self.b_key, b * self.P + rank)

    def topic_at_most(self, topics: np.ndarray, brokers: np.ndarray, most: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the position (topic order) of the largest entry of the topic on the broker with size <= most,
        else of the smallest entry of that topic there; and whether the broker holds the topic at all."""
        n = len(self.t_key)
        k = np.asarray(topics, dtype=np.int64) * self.NL + np.asarray(brokers, dtype=np.int64)
        want = np.searchsorted(self.sorted_size, most, side="right")
        at = np.searchsorted(self.t_key, k * self.P + want) - 1
        lo = np.searchsorted(self.t_key, k * self.P)
        at = np.minimum(np.where(at >= lo, at, lo), max(n - 1, 0))
        hit = (self.t_key[at] // self.P == k) if n else np.zeros(len(k), dtype=bool)
        return at, hit

    # updates -----------------------------------------------------------------------------------------------------

    def note(self, row: int, slot: int, broker: int) -> None:
        """Entry (row, slot) is about to leave ``broker``: remember where it was at the last sync."""
        self._moved.setdefault((row, slot), broker)

    def sync(self, assign: np.ndarray) -> None:
        """Bring both orders up to date with ``assign`` for the entries noted since the last sync."""
        if not self._moved:
            return
        rs = np.array(list(self._moved.keys()), dtype=np.int64).reshape(-1, 2)
        old = np.array(list(self._moved.values()), dtype=np.int64)
        self._moved = {}
        r, s = rs[:, 0], rs[:, 1]
        new = assign[r, s].astype(np.int64)
        ch = new != old
        r, old, new = r[ch], old[ch], new[ch]
        if len(r):
            self.b_key = replace_sorted(self.b_key, self._bkey(r, old), self._bkey(r, new))
            self.t_key = replace_sorted(self.t_key, self._tkey(r, old), self._tkey(r, new))


def slots_of(assign: np.ndarray, rows: np.ndarray, brokers: np.ndarray) -> np.ndarray:
    """The slot of each (row, broker) entry in ``assign`` (the row holds the broker)."""
    return np.argmax(assign[rows] == np.asarray(brokers)[:, None], axis=1).astype(np.int64)


def replace_sorted(keys: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Sorted unique ``keys`` with the members ``old`` removed and ``new`` added (the result stays unique), in one
    copy: the kept runs and the new keys are concatenated in order."""
    at = np.searchsorted(keys, old)
    if not ((at < len(keys)).all() and (keys[np.minimum(at, len(keys) - 1)] == old).all()):
        raise AssertionError("entry index out of step with the assignment")
    new = np.sort(new)
    ins = np.searchsorted(keys, new)  # each new key goes before the key it is not above (left), after deletions
    pos = np.concatenate([at, ins])
    kind = np.concatenate([np.ones(len(at), np.int64), np.zeros(len(ins), np.int64)])  # inserts first at a tie
    seq = np.concatenate([np.zeros(len(at), np.int64), np.arange(len(ins))])
    pieces, i = [], 0
    for p, k, q in zip(*(x[np.lexsort((seq, kind, pos))].tolist() for x in (pos, kind, seq))):
        pieces.append(keys[i:p])
        if k:
            i = p + 1
        else:
            pieces.append(new[q:q + 1])
            i = p
    pieces.append(keys[i:])
    return np.concatenate(pieces)

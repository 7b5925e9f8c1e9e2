"""``flowbalance generate``: write a synthetic cluster in Kafka's input formats (registered by cli/app.py)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from flowbalance.errors import InputError
from flowbalance.formats.dumps import brokers_csv, brokers_json, describe_text, generate_text, logdirs_text
from flowbalance.formats.writers import reassignment_json, write_atomic

from .render import escape_controls
from flowbalance.generate import LAYOUTS, MAX_BROKERS, MAX_REPLICAS, MAX_TOPICS, SOURCE, generate_cluster

# --formats name -> file written in --out
FORMAT_FILES = {
    "json": "assignment.json",
    "brokers": "brokers.csv",
    "describe": "describe.txt",
    "generate": "generate.txt",
    "logdirs": "logdirs.txt",
    "brokers-json": "brokers.json",
}

# generate_cluster's parameter -> the flag that sets it (its errors name parameters; the user typed flags)
FLAGS = {
    "brokers": "--brokers", "racks": "--racks", "topics": "--topics", "partitions": "--partitions", "rf": "--rf",
    "skew": "--skew", "layout": "--layout", "rack_aware": "--rack-aware", "seed": "--seed",
    "first_broker_id": "--first-broker-id", "history": "--history", "log_dirs": "--log-dirs",
}

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
_REMEDY = re.compile(r"\b(\w+)=('?)([^\s')]+)\2")  # name=value or name='value' in a library message


def parse_partitions(text: str) -> int | tuple[int, int]:
    """``"12"`` -> 12, ``"3-24"`` -> (3, 24); anything else is an InputError on --partitions."""
    m = _RANGE.match(text or "")
    if not m:
        raise InputError("--partitions", "", "expected a count P or a range LO-HI (for example 12 or 3-24)", text)
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    if lo < 1:
        raise InputError("--partitions", "", "the partition count must be at least 1", text)
    if hi < lo:
        raise InputError("--partitions", "", "the range must have LO <= HI", text)
    return lo if m.group(2) is None else (lo, hi)


def parse_formats(text: str, sizes: bool) -> list[str]:
    """Comma list of format names (or ``all``), in the order of FORMAT_FILES."""
    names = [p.strip().lower() for p in (text or "").split(",") if p.strip()]
    if not names:
        raise InputError("--formats", "", f"no format given (choose from {', '.join(FORMAT_FILES)}, or all)", text)
    wanted: set[str] = set()
    for n in names:
        if n == "all":
            wanted.update(f for f in FORMAT_FILES if f != "logdirs" or sizes)
        elif n in FORMAT_FILES:
            wanted.add(n)
        else:
            raise InputError("--formats", "", f"unknown format (choose from {', '.join(FORMAT_FILES)}, or all)", n)
    if "logdirs" in wanted and not sizes:
        raise InputError("--formats", "", "logdirs needs partition sizes (add --sizes)", text)
    return [f for f in FORMAT_FILES if f in wanted]


def generate(
    brokers: Annotated[int, typer.Option("--brokers", help=f"Number of brokers (1 .. {MAX_BROKERS}).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Folder to write into (created if missing).")],
    racks: Annotated[int, typer.Option("--racks", help="Number of racks r0..rK-1, brokers round-robin (0 = no racks).")] = 0,
    topics: Annotated[int, typer.Option("--topics", help=f"Number of topics (topic-0000, ...; at most {MAX_TOPICS:,}); "
                                                         f"topics x partitions x RF is at most {MAX_REPLICAS:,} replicas.")] = 10,
    partitions: Annotated[str, typer.Option("--partitions", help="Partitions per topic: P, or LO-HI for uniform random.")] = "12",
    rf: Annotated[Optional[int], typer.Option("--rf", help="Replication factor (default: 3, or the broker count if smaller).")] = None,
    skew: Annotated[float, typer.Option("--skew", help="Load skew of the random layout: lognormal sigma of broker factors (0 = uniform).")] = 0.0,
    layout: Annotated[str, typer.Option("--layout", help="random; balanced (round-robin, every count within 1); or kafka "
                                                         "(Kafka's own assignment of a new topic, a random start and "
                                                         "replica shift per topic; rack-aware with --rack-aware).")] = "random",
    sizes: Annotated[bool, typer.Option("--sizes/--no-sizes", help="Give partitions heavy-tailed (Pareto) sizes, about 1 GiB mean.")] = False,
    rack_aware: Annotated[bool, typer.Option("--rack-aware", help="Put each partition's replicas in distinct racks (needs RF <= racks; "
                                                                  "with --layout kafka RF may exceed the racks: each rack gets one before any gets two, as in Kafka).")] = False,
    history: Annotated[int, typer.Option("--history", help="Grow the cluster in K waves (0 = off): brokers join in K equal groups by id, "
                                                           "topics are created in K equal groups in name order, each placed on the brokers "
                                                           "that existed then (older topics on the first brokers; the first group needs RF brokers).")] = 0,
    log_dirs: Annotated[int, typer.Option("--log-dirs", help="Log directories per broker (JBOD when above 1: "
                                                           "each replica in a random one; written in logdirs.txt, "
                                                           "so it needs --sizes).")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives the same files.")] = 0,
    first_broker_id: Annotated[int, typer.Option("--first-broker-id", help="Id of the first broker; ids are consecutive.")] = 0,
    formats: Annotated[str, typer.Option("--formats", help=f"Files to write, comma list of: {', '.join(f'{k} ({v})' for k, v in FORMAT_FILES.items())}; or all.")] = "json,brokers",
) -> None:
    """Generate a synthetic cluster and write it in Kafka's formats (assignment JSON, broker file, ...)."""
    if layout not in LAYOUTS:
        raise InputError("--layout", "", f"unknown layout (choose from {', '.join(LAYOUTS)})", layout)
    parts = parse_partitions(partitions)
    chosen = parse_formats(formats, sizes)
    if log_dirs != 1 and not sizes:
        raise InputError("--log-dirs", "", "the directories are written in logdirs.txt, which needs partition "
                                           "sizes (add --sizes)", log_dirs)
    if log_dirs != 1 and "logdirs" not in chosen:
        chosen = [f for f in FORMAT_FILES if f in set(chosen) | {"logdirs"}]
    if rf is None:
        rf = min(3, max(brokers, 1))
    try:
        state = generate_cluster(
            brokers=brokers, racks=racks, topics=topics, partitions=parts, rf=rf, skew=skew, layout=layout,
            sizes=sizes, first_broker_id=first_broker_id, seed=seed, rack_aware=rack_aware, history=history,
            log_dirs=log_dirs,
        )
    except InputError as err:
        raise as_flags(err) from None
    folder = _make_folder(out)
    writers = {
        "json": lambda: reassignment_json(state),
        "brokers": lambda: brokers_csv(state.brokers),
        "describe": lambda: describe_text(state),
        "generate": lambda: generate_text(state),
        "logdirs": lambda: logdirs_text(state),
        "brokers-json": lambda: brokers_json(state.brokers),
    }
    files = {str(folder / FORMAT_FILES[f]): writers[f]() for f in chosen}
    write_atomic(files)
    typer.echo(
        f"wrote {', '.join(FORMAT_FILES[f] for f in chosen)} to {escape_controls(folder)}: "
        f"{state.num_partitions:,} partitions, {state.num_replicas:,} replicas on {len(state.brokers):,} brokers"
    )


def as_flags(err: InputError) -> InputError:
    """A generate_cluster error under the flags that set its parameters (``topics x partitions x rf`` becomes
    ``--topics x --partitions x --rf``), its remedies too (``layout='random'`` becomes ``--layout random``); any
    other error as it is."""
    if err.source != SOURCE:
        return err
    shown = re.sub(r"\w+", lambda m: FLAGS.get(m[0], m[0]), err.place)
    message = _REMEDY.sub(lambda m: f"{FLAGS[m[1]]} {m[3]}" if m[1] in FLAGS else m[0], err.message)
    return InputError(shown, "", message, err.value, has_value=err.has_value)


def _make_folder(out: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise InputError("--out", "", "exists and is not a folder", str(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError("--out", "", f"cannot create the folder: {err.strerror or err}", str(out)) from None
    return out

"""``bench/tracking.py`` without servers: its options, statistics and tables."""

from __future__ import annotations

import json
import os

import pytest

from bench import mariadb, memory, scaling, tracking
from deploy.local.postgres import with_database


def test_defaults_are_bounded():
    args = tracking.parse_args([])
    assert args.requests == 300
    assert args.concurrent_requests == 2000
    assert args.concurrency == 16
    assert args.rows == 1000
    assert args.time_cap == 20.0
    assert args.only is None
    assert args.keep is False
    assert args.workloads == ["create", "list", "get", "filter"]


def test_options_parse():
    args = tracking.parse_args(
        ["--requests", "10", "--concurrency", "4", "--rows", "50", "--only", "reference",
         "--keep", "--workloads", "get,create", "--time-cap", "2.5"]
    )  # fmt: skip
    assert (args.requests, args.concurrency, args.rows, args.only) == (10, 4, 50, "reference")
    assert args.keep is True
    assert args.workloads == ["create", "get"]  # always in the table's order
    assert args.time_cap == 2.5


def test_our_databases_are_on_the_launchers_embedded_server_unless_a_server_is_named():
    assert tracking.parse_args([]).database_url is None
    url = "postgresql://postgres@127.0.0.1:5432/postgres"
    assert tracking.parse_args(["--database-url", url]).database_url == url


def test_each_service_database_is_on_the_named_server():
    url = with_database("postgresql://user:secret@db:5433/postgres", "bench_7_tracking")
    assert url == "postgresql://user:secret@db:5433/bench_7_tracking"


def test_versions_workload_is_chosen_explicitly_with_its_sizes():
    args = tracking.parse_args(
        ["--workloads", "versions", "--versions", "2000", "--version-artifacts", "10"]
    )
    assert (args.workloads, args.versions, args.version_artifacts) == (["versions"], 2000, 10)
    assert tracking.parse_args([]).versions == 100_000


def test_secrets_workloads_page_the_secrets_and_cycle_every_loaded_one():
    args = tracking.parse_args(["--workloads", "secret,secrets,list", "--secrets", "300"])
    assert (args.workloads, args.secrets) == (["list", "secrets", "secret"], 300)
    assert tracking.parse_args([]).secrets == 10_000
    target = tracking.Target("ours", "http://x", "t", "p", "stack", secret_ids=["s1", "s2"])
    method, path, params, body = tracking.make_request(target, "secrets", 0, args)
    assert (method, path, body) == ("GET", "/api/v1/secrets", None)
    assert params is not None
    assert (params["size"], params["hydrate"], "project" in params) == ("50", "false", False)
    requests = tracking.wrk_requests(target, "secret", args)
    assert [r.path for r in requests] == ["/api/v1/secrets/s1", "/api/v1/secrets/s2"]


def test_versions_request_uses_three_filters_and_size_50():
    args = tracking.parse_args(["--versions", "1000", "--version-artifacts", "10"])
    target = tracking.Target("ours", "http://x", "t", "p", "stack")
    method, path, params, body = tracking.make_request(target, "versions", 3, args)
    assert (method, path, body) == ("GET", "/api/v1/artifact_versions", None)
    assert params is not None
    assert (params["artifact"], params["type"], params["version_number"]) == (
        "bench-v-3",
        "ModelArtifact",
        "gte:50",
    )
    assert params["size"] == "50"


def test_wrk_versions_requests_cycle_every_versioned_artifact():
    args = tracking.parse_args(["--versions", "1000", "--version-artifacts", "4"])
    target = tracking.Target("ours", "http://x", "t", "p", "stack")
    requests = tracking.wrk_requests(target, "versions", args)
    assert [r.method for r in requests] == ["GET"] * 4
    assert all(r.path.startswith("/api/v1/artifact_versions?") for r in requests)
    assert [r.path.count(f"artifact=bench-v-{i}&") for i, r in enumerate(requests)] == [1] * 4
    assert all("version_number=gte%3A125" in r.path for r in requests)


def test_loaded_versions_are_unique_per_artifact():
    target = tracking.Target("ours", "http://x", "t", "p", "stack")
    bodies = [tracking.version_body(target, i, 7) for i in range(70)]
    assert len({(b["artifact_name"], b["version"]) for b in bodies}) == 70


@pytest.mark.parametrize(
    "argv",
    [
        ["--requests", "0"],
        ["--requests", "many"],
        ["--concurrency", "-1"],
        ["--only", "both"],
        ["--workloads", "create,delete"],
        ["--time-cap", "nan"],
        ["--database-url", "sqlite:///bench.db"],
        ["--replicas", "0"],
        ["--replicas", ","],
        ["--reference-database", "postgresql"],
        ["--mariadb-url", "postgresql://root@127.0.0.1:3306"],
        ["--mariadb-url", "mysql://127.0.0.1:3306"],
        ["--mariadb-url", "mysql://root@127.0.0.1:port"],
        ["--scaling-sizes", "lots"],
        ["--scaling-sizes", "0"],
        ["--nope"],
    ],
)
def test_bad_options_are_one_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        tracking.parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "Traceback" not in err


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert tracking.percentile(values, 50) == 50.0
    assert tracking.percentile(values, 99) == 99.0
    assert tracking.percentile([3.0], 99) == 3.0
    assert tracking.percentile([], 50) == 0.0


def _stats(rps: float, latency: float, *, errors: int = 0, cpu: float = 0.1) -> tracking.Stats:
    requests = 100
    return tracking.Stats(
        requests=requests,
        seconds=requests / rps,
        latencies=[latency] * requests,
        errors=errors,
        first_error="POST /api/v1/artifacts -> 404 {}" if errors else "",
        client_cpu=cpu,
    )


def test_table_has_ratio_and_notes():
    def row(workload: str, mode: str, ref: object, ours: object) -> tracking.Row:
        return tracking.Row(workload, mode, {"reference": ref, "ours": ours})  # type: ignore[dict-item]

    rows = [
        row("create artifact", "sequential", _stats(100, 0.010), _stats(250, 0.004)),
        row("list size=50", "16 clients", _stats(20, 0.5), "loading failed: 404"),
        row("get hydrated", "sequential", _stats(200, 0.005, cpu=0.49), None),
        row("list filtered", "sequential", _stats(10, 0.1, errors=3), _stats(5, 0.2)),
    ]
    table = tracking.format_table(rows)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["workload", "mode", "ref"]
    create = next(line for line in lines if line.startswith("create artifact"))
    assert "100.0" in create
    assert "250.0" in create
    assert create.endswith("2.50x")
    assert "10.0" in create  # p50 ms of the reference
    assert next(line for line in lines if line.startswith("list size=50")).endswith("-")
    assert "failed" in table
    assert "list size=50, 16 clients, ours: loading failed: 404" in table
    assert "list filtered, sequential, reference: 3/100 errors" in table
    assert "get hydrated, sequential, reference: client-bound" in table
    assert table.count("client-bound") == 1
    widths = {len(line) for line in lines[:2]}
    assert len(widths) == 1  # header and rule line up


def test_median_run_picks_the_middle_by_throughput():
    runs: list[tracking.Stats | str] = [_stats(10, 1), _stats(30, 1), _stats(20, 1), "failed"]
    picked = tracking.median_run(runs)
    assert isinstance(picked, tracking.Stats)
    assert round(picked.rps) == 20
    assert tracking.median_run(["failed"]) == "failed"


def test_requests_of_each_workload():
    target = tracking.Target(
        "ours", "http://x", "t", "p-id", "stack", artifact_ids=["a1", "a2"], run_tag="abc"
    )
    method, path, params, body = tracking.make_request(target, "create", 0)
    assert (method, path, params) == ("POST", "/api/v1/artifacts", None)
    assert body == {"project": "p-id", "name": "created-abc-0"}
    assert tracking.make_request(target, "create", 1)[3] == {
        "project": "p-id",
        "name": "created-abc-1",
    }
    assert tracking.make_request(target, "get", 3)[1] == "/api/v1/artifacts/a2"
    _, _, listed, _ = tracking.make_request(target, "list", 0)
    assert listed is not None
    assert listed["size"] == "50"
    _, _, filtered, _ = tracking.make_request(target, "filter", 0)
    assert filtered is not None
    assert filtered["name"] == "contains:bench-1"
    assert filtered["sort_by"] == "desc:created"


def test_zenml_headers_need_the_python_sender(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exited:
        tracking.parse_args(["--sender", "wrk", "--zenml-headers"])
    assert exited.value.code == 2
    assert "--sender python" in capsys.readouterr().err
    assert tracking.parse_args(["--sender", "python", "--zenml-headers"]).zenml_headers


def test_wrk_requests_make_unique_creates_and_cycle_every_loaded_artifact():
    target = tracking.Target("ours", "http://x", "t", "p-id", "stack", artifact_ids=["a", "b"])
    (create,) = tracking.wrk_requests(target, "create")
    assert create.method == "POST"
    assert json.loads(create.body or "")["name"] == f"created-{target.run_tag}-{{n}}"
    gets = tracking.wrk_requests(target, "get")
    assert [g.path for g in gets] == [
        "/api/v1/artifacts/a?hydrate=true",
        "/api/v1/artifacts/b?hydrate=true",
    ]
    (listing,) = tracking.wrk_requests(target, "filter")
    assert listing.path.startswith("/api/v1/artifacts?")
    assert "name=contains%3Abench-1" in listing.path


def test_ours_runs_with_one_and_two_tracking_replicas_beside_the_reference_on_mariadb():
    args = tracking.parse_args([])
    assert args.replicas == [1, 2]
    assert args.reference_database == "mariadb"
    assert args.mariadb_url == "mysql://root@127.0.0.1:3306"
    assert tracking.target_names(args) == ["reference", "ours x1", "ours x2"]
    assert tracking.parse_args(["--replicas", "3,1,3"]).replicas == [1, 3]
    assert tracking.target_names(tracking.parse_args(["--only", "ours"])) == [
        "ours x1",
        "ours x2",
    ]
    assert tracking.target_names(tracking.parse_args(["--only", "reference"])) == ["reference"]
    assert tracking.parse_args(["--reference-database", "sqlite"]).reference_database == "sqlite"


def test_table_has_a_column_group_and_a_ratio_per_replica_count():
    row = tracking.Row(
        "list size=50",
        "16 clients",
        {"reference": _stats(10, 0.5), "ours x1": _stats(200, 0.05), "ours x2": _stats(300, 0.03)},
    )
    table = tracking.format_table([row], ["reference", "ours x1", "ours x2"])
    header, _, line = table.splitlines()
    assert header.endswith("ours x1/ref  ours x2/ref")
    assert "ours x2 p50 ms" in header
    assert line.split()[-2:] == ["20.00x", "30.00x"]


def test_scaling_sizes_take_suffixes_and_ascend():
    assert scaling.sizes("1M,10k,100000,10k") == [10_000, 100_000, 1_000_000]
    assert tracking.parse_args([]).scaling_sizes == [10_000, 100_000, 1_000_000]
    assert tracking.parse_args([]).api_versions == 5_000


def test_scaling_lists_are_the_plain_first_page_and_the_filtered_one_at_each_size():
    target = tracking.Target("ours x1", "http://x", "t", "p-id", "stack")
    (plain,) = tracking.scaling_requests(target, "plain", 10_000, 100)
    assert plain[1] == "/api/v1/artifact_versions"
    assert plain[2] is not None
    assert (plain[2]["size"], plain[2]["project"]) == ("50", "p-id")
    filtered = tracking.scaling_requests(target, "filtered", 1_000_000, 100)
    assert len(filtered) == 100
    assert filtered[7][2] is not None
    assert filtered[7][2]["artifact"] == "bench-v-7"
    assert filtered[7][2]["version_number"] == "gte:5000"


def test_scaling_table_has_a_row_per_size_and_says_how_each_step_was_loaded():
    points = [
        scaling.Point(target, size, listing, 2.0 * size / 10_000, 3.0, 100)
        for target in ("reference", "ours x1")
        for size in (10_000, 100_000)
        for listing in scaling.LISTS
        if not (target == "reference" and size == 100_000)
    ]
    loads = [scaling.Load("ours x1", 100_000, 90_000, "90,000 by SQL", 3.0)]
    lines = scaling.format_table(points, loads).splitlines()
    assert lines[0].split()[0] == "versions"
    assert lines[2].split()[:4] == ["10,000", "2.0", "/", "3.0"]
    assert lines[3].split()[1] == "-"  # the reference was not grown that far
    assert lines[-1] == "  ours x1 to 100,000: 90,000 by SQL, 3.0s (30,000 versions/s)"


def test_idle_memory_sums_a_process_group_from_proc():
    usage = memory.group_usage("pytest", os.getpgid(0))
    assert os.getpid() in memory.group_members(os.getpgid(0))
    assert usage.processes >= 1
    assert usage.rss > 10 * memory.MB
    assert usage.pss is None or 0 < usage.pss <= usage.rss
    assert usage.python
    table = memory.format_table([("ours x1", [usage])])
    assert table.splitlines()[0].split()[-3:] == ["<", "120", "MB"]


def test_the_reference_on_sqlite_needs_no_database_server(tmp_path):
    with mariadb.reference_store(tmp_path / "python", "sqlite", "mysql://x@h", keep=False) as store:
        assert store.url is None


def test_idle_memory_is_judged_on_rss_the_strictest():
    over = memory.Usage("tracking", 1, 121 * memory.MB, 90 * memory.MB, 85 * memory.MB, True)
    under = memory.Usage("identity", 1, 119 * memory.MB, 90 * memory.MB, 85 * memory.MB, True)
    rows = memory.format_table([("ours x1", [over, under])]).splitlines()[2:]
    assert [row.split()[-1] for row in rows] == ["NO", "yes"]

"""Shared fixtures for every folder of tests/: database services (helpers in tests/services.py), the Spark
cluster, and the skipping of slow tests. Plain helpers live in modules beside this file (services,
servers, shipped, oidc, apphost, hostile_specs), importable from any folder (pytest's `pythonpath`)."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import services
from hangs import pytest_configure, pytest_runtest_protocol  # noqa: F401  (a hung test ends the run, with stacks)

# Bytecode is kept, in an ignored folder rather than beside the sources, even where PYTHONDONTWRITEBYTECODE is
# set: compiling mcpgen and rewriting the tests' asserts was half of collection's CPU, paid again by every
# pytest-xdist worker and every `mcpgen` process a test starts (they inherit this environment).
if "PYTHONPYCACHEPREFIX" not in os.environ:
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = str(Path(__file__).parent / ".artifacts" / "pycache")
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Helper modules, not test files: imported by name (`import services`), never collected as modules themselves.
collect_ignore = [
    "apphost.py",
    "hostile_specs.py",
    "oidc.py",
    "servers.py",
    "services.py",
    "shipped.py",
    "tcpproxy.py",
    "hangs.py",
    "walks.py",
]

# The test services are reached as their superusers (postgres, root), which mcpgen refuses by default:
# the tests (and the `mcpgen serve` processes they start) serve them with a warning instead. The tests
# of that refusal (tests/engines/sqlalchemy/test_privileges.py) take this away.
os.environ.setdefault("MCPGEN_PRIVILEGED_ROLE", "warn")


# Parsed templates and spec files (mcpgen.cachefile) are cached in a folder of this run, not the user's.
if "MCPGEN_CACHE_DIR" not in os.environ:
    os.environ["MCPGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="mcpgen-test-cache-")
    atexit.register(shutil.rmtree, os.environ["MCPGEN_CACHE_DIR"], True)


# --- slow tests (browsers, the Spark cluster, load, server processes) run in CI and on request -------
@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Put every `spark` test in one pytest-xdist group (under -n, one worker, so one Spark cluster: the
    session's), first, since it is the longest; skip `slow` tests, saying how to run them, unless MCPGEN_SLOW=1,
    MCPGEN_REQUIRE_SERVICES=1 (CI) or a -m expression chooses tests by marker."""
    items.sort(key=lambda item: "spark" not in item.keywords)
    for item in items:
        if "spark" in item.keywords:
            item.add_marker(pytest.mark.xdist_group("spark"))
    if os.environ.get("MCPGEN_SLOW") == "1" or services.services_required() or config.getoption("markexpr"):
        return
    skip = pytest.mark.skip(reason="slow test: run with MCPGEN_SLOW=1 (CI runs every test)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_xdist_make_scheduler(config, log):
    """Under -n, a worker takes a whole test module at a time (a group, such as the Spark tests, across
    modules): a module's fixtures (served projects, browsers, loaded tables) are then built by one worker
    only, not by each worker that happened to get one of its tests."""
    from xdist.scheduler import LoadGroupScheduling

    class ModuleScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return scope if scope != nodeid else nodeid.split("::", 1)[0]

    return ModuleScheduling(config, log)


# --- what the pytest-xdist workers send the controller ------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Captured output goes to the controller as UTF-8: a lone surrogate a test logged is sent escaped."""
    report = yield
    report.sections = [(name, text.encode("utf-8", "backslashreplace").decode()) for name, text in report.sections]
    return report


def pytest_terminal_summary(terminalreporter):
    """Print what tests recorded as `("summary", text)` in their user_properties (the corpus's counts): a
    worker's own output goes nowhere."""
    reports = [r for rs in terminalreporter.stats.values() for r in rs if getattr(r, "when", None) == "call"]
    texts = [t for r in sorted(reports, key=lambda r: r.nodeid) for k, t in r.user_properties if k == "summary"]
    if texts:
        terminalreporter.section("summary")
        for text in texts:
            terminalreporter.line(text)


# --- database services: PostgreSQL, MariaDB, and the cities table in each ----------------------------


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test's own (mcpgen's cache of parsed and checked specs), turned on."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MCPGEN_CACHE_DIR", str(folder))
    monkeypatch.delenv("MCPGEN_CACHE", raising=False)
    return folder


class Hostile:
    """A pickle that would run a command when read (a cache file that must be refused)."""

    def __reduce__(self):
        return (os.system, ("touch hostile-was-run",))


@pytest.fixture
def hostile():
    return Hostile()


@pytest.fixture(scope="session")
def postgres_url():
    """URL of the PostgreSQL test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("postgresql")


@pytest.fixture(scope="session")
def mariadb_url():
    """URL of the MariaDB test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("mariadb")


@pytest.fixture(scope="session")
def city_rows():
    """Every row of examples/data/cities.csv as typed tuples."""
    return services.read_cities(services.CITIES_CSV)


def _cities_table(service, rows):
    table = services.unique_name("cities")
    services.load_cities(service, table, rows)
    return table


@pytest.fixture(scope="session")
def postgres_cities(postgres_url, city_rows):
    """A cities table of this session's own in PostgreSQL (name: cities_<random>), dropped at the end."""
    table = _cities_table("postgresql", city_rows)
    yield table
    services.drop_table("postgresql", table)


@pytest.fixture(scope="session")
def mariadb_cities(mariadb_url, city_rows):
    """A cities table of this session's own in MariaDB (name: cities_<random>), dropped at the end."""
    table = _cities_table("mariadb", city_rows)
    yield table
    services.drop_table("mariadb", table)


@pytest.fixture(scope="session")
def rls_table(postgres_url):
    """A PostgreSQL table of services.ORDERS with one row-level security policy (rows whose email is the
    setting app.email), and a login role subject to it; both dropped at the end."""
    table, role = services.unique_name("orders"), services.unique_name("reader")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE TABLE {table} (email text, id int, amount float8)")
        with con.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", services.ORDERS)
        con.execute(f"CREATE ROLE {role} LOGIN")
        con.execute(f"GRANT SELECT ON {table} TO {role}")
        con.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        con.execute(f"CREATE POLICY own_rows ON {table} USING (email = current_setting('app.email', true))")
    yield table, role
    with services.connect("postgresql") as con:
        con.execute(f"DROP TABLE {table}")
        con.execute(f"DROP ROLE {role}")


# --- a local Spark cluster (mcpgen.spark_cluster): two executor JVMs behind a Spark Connect server ---


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A running LocalSparkCluster, stopped at the end of the session; skips (or fails under
    MCPGEN_REQUIRE_SERVICES=1) without pyspark or Java."""
    import shutil

    reason = None
    try:
        import pyspark  # noqa: F401
    except ImportError:
        reason = "Spark tests need pyspark: pip install -e '.[spark]'"
    if reason is None and shutil.which("java") is None:
        reason = "Spark tests need Java 17 (java is not on PATH)"
    if reason:
        if services.services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    from mcpgen.spark_cluster import LocalSparkCluster

    cluster = LocalSparkCluster(workers=2, executor_memory="512m", folder=tmp_path_factory.mktemp("spark"))
    cluster.start()
    yield cluster
    cluster.stop()

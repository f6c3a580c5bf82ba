# --- database services (tests/services.py): PostgreSQL, MariaDB, and the cities table in each ---
import pytest
import services


@pytest.fixture(scope="session")
def postgres_url():
    """URL of the PostgreSQL test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("postgresql")


@pytest.fixture(scope="session")
def mariadb_url():
    """URL of the MariaDB test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("mariadb")


@pytest.fixture(scope="session")
def city_rows(tmp_path_factory):
    """Every row of examples/data/cities.csv as typed tuples."""
    return services.read_cities(services.cities_csv(tmp_path_factory.mktemp("cities")))


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

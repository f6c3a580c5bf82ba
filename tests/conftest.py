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

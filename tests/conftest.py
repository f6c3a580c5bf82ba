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
